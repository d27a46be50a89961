/**
 * A stop signal delivered twice is one stop: a terminal signals its whole process group, and npm/npx (and
 * some MCP clients' process-group kills) forward what they get to their child, so one Ctrl+C can arrive
 * twice within milliseconds. Only a repeat this long after the first counts as "stop now".
 */
export const SAME_STOP_MS = 1000;

/** Whether a stop signal at `now` repeats the one at `firstAt` as a new request (not the same one delivered twice). */
export function isNewStop(firstAt: number, now: number = Date.now()): boolean {
  return now - firstAt >= SAME_STOP_MS;
}

/**
 * End this process by `signal` (its default course, as if no handler had been installed): `removeHandlers`
 * first, then the signal raised again. On Windows that is TerminateProcess, which is what "stop now" means.
 */
export function endBySignal(signal: NodeJS.Signals, removeHandlers: () => void): void {
  removeHandlers();
  process.kill(process.pid, signal);
}
