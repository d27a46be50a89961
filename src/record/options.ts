/**
 * `createRecorder`'s options, checked at the boundary: a wrong type is a TypeError and a value out of range a
 * RangeError naming the option (`Expected options.sessionsDir to be a string`), before anything is opened.
 */
import {
  expectArray,
  expectBoolean,
  expectFunction,
  expectNumber,
  expectObject,
  expectOneOf,
  expectOptions,
  expectRegExp,
  expectString,
  expectStringItem,
  expectStringOrRegExp,
} from '../util/expect.js';
import type { RecorderOptions } from './types.js';

const TRANSPORTS = ['wrap', 'http', 'stdio'] as const;
const THROWN_SHAPES = ['call-tool-result', 'envelope'] as const;
const MASK_MODES = ['before-write', 'on-export'] as const;

/** The options as given, checked; throws TypeError/RangeError naming the first bad option. */
export function checkRecorderOptions(value: unknown): RecorderOptions {
  const o = expectOptions(value);
  // '' is the default sessions dir, as for `--sessions ''` ($MCEC_SESSIONS_DIR, else ./sessions).
  expectString(o.sessionsDir, 'options.sessionsDir');
  expectString(o.scenario, 'options.scenario');
  if (o.redact !== undefined) {
    expectObject(o.redact, 'options.redact');
    expectArray(o.redact.keys, 'options.redact.keys', expectStringOrRegExp);
    expectArray(o.redact.patterns, 'options.redact.patterns', expectRegExp);
    expectArray(o.redact.secrets, 'options.redact.secrets', expectStringItem);
    expectBoolean(o.redact.keepTypedText, 'options.redact.keepTypedText');
  }
  if (o.limits !== undefined) {
    expectObject(o.limits, 'options.limits');
    for (const key of ['maxLogBytes', 'maxArtifactBytes', 'maxHostFileBytes'])
      expectNumber(o.limits[key], `options.limits.${key}`, { min: 0, integer: true });
  }
  expectBoolean(o.copyHostFiles, 'options.copyHostFiles');
  expectArray(o.hostPathMap, 'options.hostPathMap', (entry, name) => {
    expectObject(entry, name);
    expectStringItem(entry.from, `${name}.from`);
    expectStringItem(entry.to, `${name}.to`);
  });
  expectBoolean(o.thumbnails, 'options.thumbnails');
  if (o.mask !== undefined) {
    expectObject(o.mask, 'options.mask');
    for (const key of ['enabled', 'typedText', 'secretFields'])
      expectBoolean(o.mask[key], `options.mask.${key}`);
    expectArray(o.mask.rules, 'options.mask.rules');
    expectOneOf(o.mask.mode, 'options.mask.mode', MASK_MODES);
  }
  expectBoolean(o.fillLastObservation, 'options.fillLastObservation');
  expectArray(o.observationTools, 'options.observationTools', expectStringItem);
  if (o.otlp !== undefined && typeof o.otlp !== 'boolean') {
    expectObject(o.otlp, 'options.otlp');
    expectString(o.otlp.url, 'options.otlp.url', { nonEmpty: true });
    if (o.otlp.headers !== undefined) expectObject(o.otlp.headers, 'options.otlp.headers');
    expectBoolean(o.otlp.includeArguments, 'options.otlp.includeArguments');
    for (const key of ['maxQueueSize', 'scheduledDelayMillis', 'exportTimeoutMillis', 'shutdownTimeoutMs'])
      expectNumber(o.otlp[key], `options.otlp.${key}`, { min: 0 });
    expectString(o.otlp.serviceName, 'options.otlp.serviceName');
  }
  expectOneOf(o.transport, 'options.transport', TRANSPORTS);
  expectFunction(o.stderr, 'options.stderr');
  expectOneOf(o.thrownShape, 'options.thrownShape', THROWN_SHAPES);
  expectNumber(o.commitIntervalMs, 'options.commitIntervalMs', { min: 0 });
  expectNumber(o.maxOpenLogs, 'options.maxOpenLogs', { min: 1, integer: true });
  return o as RecorderOptions;
}
