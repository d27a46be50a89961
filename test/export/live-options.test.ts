import { describe, expect, it } from 'vitest';
import { liveExportOptions } from '../../src/export/live-options.js';

describe('liveExportOptions', () => {
  it('is off by default and on with an otlp option', () => {
    expect(liveExportOptions(undefined, {})).toBeNull();
    expect(liveExportOptions(true, {})).toEqual({});
    expect(liveExportOptions({ url: 'http://c:4318/v1/traces' }, {})).toEqual({
      url: 'http://c:4318/v1/traces',
    });
    expect(liveExportOptions(false, { OTEL_TRACES_EXPORTER: 'otlp' })).toBeNull();
  });

  it('follows OTEL_TRACES_EXPORTER and OTEL_SDK_DISABLED', () => {
    expect(liveExportOptions(undefined, { OTEL_TRACES_EXPORTER: 'console, otlp' })).toEqual({});
    expect(liveExportOptions(undefined, { OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(liveExportOptions(true, { OTEL_SDK_DISABLED: 'TRUE' })).toBeNull();
    // An endpoint alone does not turn export on: the SDK's own variables decide, as in any OTel SDK.
    expect(liveExportOptions(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBeNull();
  });
});
