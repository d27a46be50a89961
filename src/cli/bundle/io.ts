/** What every mcec-bundle command prints with: neutralized stdout/stderr lines, progress, exit codes. */
// The escaping is util's, not report's: bundled into the entry (a dynamic import cost every command a load).
import { escapeFormatChars } from '../../util/format-chars.js';

/** Exit codes: 0 done, 1 the work failed, 2 bad usage (EXIT_USAGE in ../common.ts). */
export const EXIT_FAILED = 1;

/** `text` as it may reach a terminal: control and bidi characters shown, never obeyed. */
export function neutralized(text: string): string {
  return escapeFormatChars(text);
}

/** Write a line to stdout; control and bidi characters from recorded text are shown, never obeyed. */
export function print(text: string): void {
  const safe = escapeFormatChars(text);
  process.stdout.write(safe.endsWith('\n') ? safe : `${safe}\n`);
}

/** Write a line to stderr, neutralized like print. */
export function printErr(text: string): void {
  process.stderr.write(`${escapeFormatChars(text)}\n`);
}

/** A warning from the library, on stderr. */
export function warn(message: string): void {
  printErr(`mcec-bundle: warning: ${message}`);
}

/** How long work runs before its progress shows (MCEC_PROGRESS_AFTER_MS, for tests: 0 shows it at once). */
function progressDelayMs(): number {
  const raw = process.env.MCEC_PROGRESS_AFTER_MS;
  const n = raw ? Number(raw) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? n : 1000;
}

/**
 * Progress on stderr, only for a terminal and only once the work has taken over a second: a pipe or a file
 * (a script, CI, --json read by a program) never gets it, and stdout never does.
 */
export function progressReporter(what = 'bundling'): {
  onProgress?: (done: number, total: number) => void;
  stop(): void;
} {
  if (!process.stderr.isTTY) return { stop() {} };
  const started = Date.now();
  const delay = progressDelayMs();
  let shown = false;
  let lastPct = -1;
  return {
    onProgress(done, total) {
      if (Date.now() - started < delay) return;
      const pct = total > 0 ? Math.floor((100 * done) / total) : 100;
      if (pct === lastPct && shown) return;
      shown = true;
      lastPct = pct;
      process.stderr.write(`\r${what}... ${pct}% (${done}/${total})`);
    },
    stop() {
      if (shown) process.stderr.write('\r\x1b[K');
    },
  };
}

/** `n word` or `n words`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
