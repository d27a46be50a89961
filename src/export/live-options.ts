/** When a recorder exports live, and where: its `otlp` option and the standard OpenTelemetry variables. */

import { withoutUrlCredentials } from '../redact/inline-secrets.js';

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
   * Longest wait in `close()` for queued spans; the rest counts as dropped. Default 5 s, but 1 s for a
   * recorder of a stdio proxy (an MCP client ends a stdio server 2 s after closing its stdin).
   */
  shutdownTimeoutMs?: number;
  /** `service.name` unless `OTEL_SERVICE_NAME` says otherwise (default `mcec-recorder`). */
  serviceName?: string;
}

/** `shutdownTimeoutMs` when not given. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 5000;

/**
 * `shutdownTimeoutMs` when not given to a recorder of a stdio proxy: an MCP client sends its server SIGTERM
 * 2 s after closing its stdin, and the recorder must have written its counts and exited by then.
 */
export const STDIO_SHUTDOWN_TIMEOUT_MS = 1000;

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

/**
 * Why the endpoint the export would send to (`url`, else the one the `OTEL_EXPORTER_OTLP_*` variables give)
 * cannot be one, in a line naming where it came from (`urlFrom` for `url`: `--otlp`, `options.otlp.url`) and
 * showing it without credentials; null when it is an http(s) URL. The one check of mcec-record, mcec-bundle
 * export and createRecorder, each of which throws its own error with this line.
 */
export function tracesEndpointProblem(
  url: string | undefined,
  urlFrom: string,
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  const endpoint = url ?? resolveTracesUrl(undefined, env);
  const problem = tracesUrlProblem(endpoint);
  if (!problem) return null;
  const from =
    url !== undefined
      ? urlFrom
      : env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
        ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
        : 'OTEL_EXPORTER_OTLP_ENDPOINT (plus /v1/traces)';
  return `${from} ${JSON.stringify(withoutUrlCredentials(endpoint))} ${problem}`;
}
