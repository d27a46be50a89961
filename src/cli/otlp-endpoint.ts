/** The OpenTelemetry traces endpoint of `mcec-record --otlp` and `mcec-bundle export`, checked before any export. */
import { resolveTracesUrl, tracesUrlProblem } from '../export/live-options.js';
import { withoutUrlCredentials } from '../redact/inline-secrets.js';
import { UsageError } from './common.js';

/**
 * Throws a UsageError (exit 2) when the endpoint the export would send to, `--otlp` or else the one the
 * `OTEL_EXPORTER_OTLP_*` variables give, is not an http(s) URL. The message shows it without credentials.
 */
export function checkTracesEndpoint(otlp: string | undefined, env: NodeJS.ProcessEnv = process.env): void {
  const url = otlp ?? resolveTracesUrl(undefined, env);
  const problem = tracesUrlProblem(url);
  if (!problem) return;
  const from =
    otlp !== undefined
      ? '--otlp'
      : env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
        ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
        : 'OTEL_EXPORTER_OTLP_ENDPOINT (plus /v1/traces)';
  throw new UsageError(`${from} ${JSON.stringify(withoutUrlCredentials(url))} ${problem}`);
}
