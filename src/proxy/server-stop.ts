/**
 * How the stdio proxy stops its server: the MCP specification's stdio shutdown, which the proxy, the
 * server's client, follows on every platform. Its stdin is closed, and the server has the grace to exit
 * (flushing what it holds); then SIGTERM, and half the grace later SIGKILL. On Windows both signals are
 * TerminateProcess (no chance to flush): closing stdin is the polite stop there, as for any stdio server.
 */

import { isNewStop } from '../util/stop-signal.js';

/** How long the server has to exit once its stdin is closed before it gets SIGTERM (half that, then SIGKILL). */
export const DEFAULT_STOP_GRACE_MS = 2000;

/** An MCP client (the MCP SDKs' stdio transports) sends SIGKILL this long after its SIGTERM. */
export const CLIENT_KILL_AFTER_MS = 2000;
/** After the client's SIGTERM the server's SIGKILL comes at most this long later: the close needs the rest. */
const CLIENT_TERM_SERVER_KILL_MS = 500;
/** What the recorder's close needs after the export's wait, before the client's SIGKILL (commit, logs, exit). */
const CLOSE_AFTER_EXPORT_MS = 700;

/** What the stop needs of the child process. */
export interface StoppableChild {
  kill(signal: NodeJS.Signals): boolean;
}

/**
 * One server's stop. The whole sequence takes 1.5 graces (3 s by default) from its stdin's close: an MCP
 * client that follows the specification itself (the SDK's: stdin closed, 2 s, SIGTERM, 2 s, SIGKILL) sends
 * the proxy its SIGTERM once the server's first grace has passed, and the proxy's SIGKILL comes before the
 * client's, with time left to close the recorder.
 */
export class ServerStop {
  /** When the server's stdin was closed (by the client's end of input, or by this stop), or null. */
  private stdinClosedAt: number | null = null;
  /** True when the client's end of input closed it (not this stop). */
  private stdinClosedByTheClient = false;
  /** What asked for the stop first (`SIGTERM received`), or null while none did. */
  private requestedBy: string | null = null;
  /** When the last stop that counted was asked for (a repeat within SAME_STOP_MS is the same one). */
  private lastRequestAt = 0;
  private readonly signalsSent: Array<'SIGTERM' | 'SIGKILL'> = [];
  private timer: NodeJS.Timeout | null = null;
  private gone = false;
  /** When the client's SIGKILL is due (its SIGTERM came after it closed stdin), or null. */
  private clientKillAt: number | null = null;

  constructor(
    private readonly child: StoppableChild,
    /** Close the server's stdin (the proxy's own pipe end, after what it still holds for the server). */
    private readonly closeStdin: () => void,
    private readonly graceMs: number,
    /** One line for the proxy's user (stderr). */
    private readonly say: (line: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The client's input ended and the server's stdin was closed with it: the grace counts from now. */
  stdinClosedByClient(): void {
    if (this.stdinClosedAt !== null) return;
    this.stdinClosedAt = this.now();
    this.stdinClosedByTheClient = true;
  }

  /**
   * A stop was asked for (`why`: a signal this process received, an abort). The first closes the server's
   * stdin (unless the client did) and sends SIGTERM when the grace since that close has passed; each later
   * one takes the next step at once (an impatient second Ctrl+C). A SIGTERM (`sigterm`) after the client
   * closed stdin is an MCP client's second step, its SIGKILL due 2 s later: the server's grace is over (SIGTERM
   * at once) and its SIGKILL comes within 0.5 s, so the recorder's close fits before the client's SIGKILL.
   */
  request(why: string, sigterm = false): void {
    if (this.gone) return;
    if (this.requestedBy !== null) {
      // The same stop delivered twice (a terminal's process group and npx both forward Ctrl+C) is one request.
      if (!isNewStop(this.lastRequestAt, this.now())) return;
      this.lastRequestAt = this.now();
      this.escalate();
      return;
    }
    this.requestedBy = why;
    this.lastRequestAt = this.now();
    if (sigterm && this.stdinClosedByTheClient) this.clientKillAt = this.now() + CLIENT_KILL_AFTER_MS;
    let left = this.graceMs;
    if (this.stdinClosedAt === null) {
      this.stdinClosedAt = this.now();
      this.closeStdin();
    } else if (this.clientKillAt !== null) left = 0;
    else left = Math.max(0, this.stdinClosedAt + this.graceMs - this.now()); // the client closed it earlier
    this.say(`${why}: the server's stdin is closed; it has ${seconds(left)} to exit before SIGTERM`);
    this.escalateAt(this.now() + left);
  }

  /**
   * When the recorder's close must end its export's wait (a `Date.now()` time), or undefined: set when an MCP
   * client's SIGTERM came, so that the close ends before the client's SIGKILL.
   */
  exportDeadline(): number | undefined {
    return this.clientKillAt === null ? undefined : this.clientKillAt - CLOSE_AFTER_EXPORT_MS;
  }

  /** True once the server has exited: a stop asked for now has nothing to stop. */
  get serverExited(): boolean {
    return this.gone;
  }

  /** The server exited: nothing more is sent. */
  exited(): void {
    this.gone = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /**
   * Why the requests still in flight got no answer: `server exited` when it exited on its own (or after the
   * client's end of input), else how it exited and what this proxy did to stop it, in order, saying when the
   * client had closed the server's stdin first (`client closed stdin; SIGTERM received: SIGTERM`).
   */
  exitReason(status: number | null, signal: NodeJS.Signals | null): string {
    if (this.requestedBy === null) return 'server exited';
    const how = signal !== null ? `killed by ${signal}` : `exit code ${status ?? 'unknown'}`;
    // Who closed the server's stdin: the client before the stop (as an MCP client's close begins), or the stop.
    const steps = this.stdinClosedByTheClient ? this.signalsSent : ['stdin closed', ...this.signalsSent];
    const stopped = steps.length > 0 ? `${this.requestedBy}: ${steps.join(', ')}` : this.requestedBy;
    const by = this.stdinClosedByTheClient ? `client closed stdin; ${stopped}` : stopped;
    return `server exited (${how}) while mcec-record stopped it (${by})`;
  }

  private escalateAt(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.escalate(), Math.max(0, at - this.now()));
  }

  /** The next signal: SIGTERM, then SIGKILL (half the grace later); nothing after SIGKILL. */
  private escalate(): void {
    if (this.gone || this.signalsSent.includes('SIGKILL')) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const signal = this.signalsSent.length === 0 ? 'SIGTERM' : 'SIGKILL';
    this.signalsSent.push(signal);
    this.say(`the server has not exited: ${signal}`);
    try {
      this.child.kill(signal);
    } catch {
      // gone meanwhile: its exit is reported as usual
    }
    if (signal !== 'SIGTERM') return;
    const killAfter = Math.ceil(this.graceMs / 2);
    this.escalateAt(
      this.now() + (this.clientKillAt === null ? killAfter : Math.min(killAfter, CLIENT_TERM_SERVER_KILL_MS)),
    );
  }
}

/** `2 s`, `0.3 s`: to a tenth of a second. */
function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
