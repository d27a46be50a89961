/**
 * Killing a recording process mid-write: `killWhenReady` forks the one crash child (crash-child.ts) on a
 * scenario, waits for the state under test, kills it with SIGKILL and waits for it to die. What it left
 * behind is real SQLite files and artifacts for the test to check.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** What the crash child tells its parent. */
export type CrashChildMessage =
  | { kind: 'ready'; sessionId: string; bytes?: number }
  | { kind: 'done'; n: number; at: number };

/** The MCEC session id the `in-flight` scenario's envelopes carry. */
export const IN_FLIGHT_SESSION_ID = 'c4a5be11f00d';

const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A crash scenario (see crash-child.ts). */
export type CrashScenario = 'in-flight' | 'steady' | 'captures';

export interface KillOptions {
  /** Extra arguments after the sessions dir (`steady`: its delay between calls in ms). */
  args?: string[];
  /** Kill once this holds for the messages so far (default: at the `ready` message). */
  until?: (messages: readonly CrashChildMessage[]) => boolean;
  /** Wait this long after `until` holds before the kill (to land it mid-write, not to wait for a commit). */
  delayMs?: number;
  /** Give up (kill, reject) when the child is not ready by then (default 30 s). */
  timeoutMs?: number;
}

/** What the killed child left: its pid, its ready message and everything it said, and when it was killed. */
export interface KilledChild {
  pid: number;
  ready: Extract<CrashChildMessage, { kind: 'ready' }>;
  messages: CrashChildMessage[];
  /** Date.now() when SIGKILL was sent. */
  killedAt: number;
}

/**
 * Fork the crash child on `scenario` recording into `sessionsDir`, SIGKILL it once `until` holds (default:
 * when it is ready), and resolve when it has died. Rejects when it exits on its own or never gets there.
 */
export function killWhenReady(
  scenario: CrashScenario,
  sessionsDir: string,
  options: KillOptions = {},
): Promise<KilledChild> {
  const until = options.until ?? ((ms) => ms.some((m) => m.kind === 'ready'));
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [scenario, sessionsDir, ...(options.args ?? [])], {
      cwd: ROOT,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => {
      stderr += b.toString('utf8');
    });
    const messages: CrashChildMessage[] = [];
    let killedAt = 0;
    const kill = () => {
      if (killedAt) return;
      killedAt = Date.now();
      child.kill('SIGKILL');
    };
    child.on('message', (m: CrashChildMessage) => {
      if (killedAt) return;
      messages.push(m);
      if (!until(messages)) return;
      if (options.delayMs) setTimeout(kill, options.delayMs);
      else kill();
    });
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`crash child (${scenario}) not ready in time: ${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const ready = messages.find((m) => m.kind === 'ready');
      if (signal !== 'SIGKILL' || !ready || !killedAt)
        reject(new Error(`crash child (${scenario}) exited on its own (${code}, ${signal}): ${stderr}`));
      else resolve({ pid: child.pid!, ready, messages, killedAt });
    });
  });
}
