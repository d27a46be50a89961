/** When a recorder exports live, and where: its `otlp` option and the standard OpenTelemetry variables. */
import type { LiveExportOptions } from './live.js';

/** The recorder's `otlp` option: `true` or `{}` takes everything from `OTEL_EXPORTER_OTLP_*`. */
export type OtlpOption = boolean | LiveExportOptions | undefined;

/**
 * The live export's options, or null when it is off: off when `OTEL_SDK_DISABLED=true` whatever the option
 * says; on with an `otlp` option (false turns it off), or without one when `OTEL_TRACES_EXPORTER` lists `otlp`.
 */
export function liveExportOptions(
  option: OtlpOption,
  env: NodeJS.ProcessEnv = process.env,
): LiveExportOptions | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  if (option === false) return null;
  if (option === true) return {};
  if (option !== undefined && option !== null && typeof option === 'object') return option;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim().toLowerCase());
  return exporters.includes('otlp') ? {} : null;
}
