/** When a recorder exports live, and where: its `otlp` option and the standard OpenTelemetry variables. */

/** Where and how the live OpenTelemetry export sends (src/export/README.md); every field is optional. */
export interface OtlpExportOptions {
  /** The traces endpoint, e.g. `http://collector:4318/v1/traces`; default from `OTEL_EXPORTER_OTLP_*`. */
  url?: string;
  /** Extra HTTP headers (an API key); merged over `OTEL_EXPORTER_OTLP_HEADERS`. */
  headers?: Record<string, string>;
  /** Put each call's (redacted) arguments on its span (default false). */
  includeArguments?: boolean;
  /** Spans held while the collector is slow or away (default 2048); past it they are dropped and counted. */
  maxQueueSize?: number;
  /** How long a batch waits before it is sent (default 1000 ms). */
  scheduledDelayMillis?: number;
  /** One export's limit, retries included (default 10 s). */
  exportTimeoutMillis?: number;
  /**
   * Longest wait in `close()` for queued spans (default 1 s: an MCP client ends a stdio server 2 s after
   * closing its stdin); the rest counts as dropped.
   */
  shutdownTimeoutMs?: number;
  /** `service.name` unless `OTEL_SERVICE_NAME` says otherwise (default `mcec-recorder`). */
  serviceName?: string;
}

/** `shutdownTimeoutMs` when not given. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 1000;

/** Options of the live export: where to send, and how long `shutdown` may wait for the collector. */
export type LiveExportOptions = OtlpExportOptions;

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

/** The traces endpoint the exporter will use, as the OTLP exporter spec resolves it. */
export function resolveTracesUrl(url: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (url) return url;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (base) return `${base.replace(/\/+$/, '')}/v1/traces`;
  return 'http://localhost:4318/v1/traces';
}

/**
 * Why `url` cannot be a traces endpoint (the export sends OTLP/HTTP), or null when it can: it must be an
 * absolute http: or https: URL. Said without the URL, which the caller shows without its credentials.
 */
export function tracesUrlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a URL (an OTLP/HTTP traces endpoint, e.g. http://collector:4318/v1/traces)';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    return `uses ${parsed.protocol}; the OTLP/HTTP export needs http: or https:`;
  return null;
}
