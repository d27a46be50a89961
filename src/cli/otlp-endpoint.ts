/** The OpenTelemetry traces endpoint of `mcec-record --otlp` and `mcec-bundle export`, checked before any export. */
import { tracesEndpointProblem } from '../export/live-options.js';
import { UsageError } from './common.js';

/**
 * Throws a UsageError (exit 2) when the endpoint the export would send to, `--otlp` or else the one the
 * `OTEL_EXPORTER_OTLP_*` variables give, is not an http(s) URL. The message shows it without credentials.
 */
export function checkTracesEndpoint(otlp: string | undefined, env: NodeJS.ProcessEnv = process.env): void {
  const problem = tracesEndpointProblem(otlp, '--otlp', env);
  if (problem) throw new UsageError(problem);
}
