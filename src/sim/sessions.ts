/** The simulator's own sessions, kept the way the real server keeps them (mcec-wire §5). */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { WindowInfo } from '../contract/types.js';
import { artifactFileName, utcStamp } from '../paths/naming.js';

/** What the server remembers of a session's activity, and reports in session-status. */
export interface SessionMemory {
  activeTarget?: WindowInfo;
  lastAction?: string;
  lastObservation?: Record<string, unknown>;
  lastError?: Record<string, unknown>;
  emergencyStop?: { at: string; source: string };
}

/** One server-side session as the store holds it: identity, artifact dir, and memory of the last target/observation/error. */
interface SessionState extends SessionMemory {
  id: string;
  startedAt: Date;
  /** The 100 ns ticks below the millisecond of startedAt (0..9999): .NET keeps 7 fractional digits. */
  startedAtTicks: number;
  artifactDir: string;
  /** True for the implicit default session (created on first use; its id is on every envelope of its calls). */
  isDefault: boolean;
  ended: boolean;
  artifactCounter: number;
}

/**
 * A session as the server and its tools see it: its fields read-only, so only the store's methods change them
 * (one level deep: the objects they hold, `startedAt` a Date, are not frozen by this type).
 */
export type SimSession = Readonly<SessionState>;

/** What session-start / session-status report about a session. */
export interface SessionStatus extends SessionMemory {
  sessionId: string;
  startedAt: string;
  artifactDir: string;
  commandAccess: Record<string, unknown>;
  ended?: boolean;
}

/**
 * A UTC time as .NET's round-trip format writes a DateTime of kind Utc (`ToString("o")`): 7 fractional
 * digits, e.g. `2026-07-01T23:30:05.1234567Z`. `ticks` are the 100 ns units below the millisecond.
 */
export function roundTripUtc(date: Date, ticks = 0): string {
  const t = Math.max(0, Math.min(9999, Math.floor(ticks)));
  return `${date.toISOString().slice(0, 23)}${String(t).padStart(4, '0')}Z`;
}

/** The compact stand-in kept when the last good observation is an inline capture. */
const SUMMARY_KEYS = [
  'window',
  'handle',
  'width',
  'height',
  'encoding',
  'bytes',
  'blankCheck',
  'file',
] as const;

/** The registry of sessions: the implicit default one plus those started with session-start. */
export class SessionStore {
  private current: SessionState | undefined;
  private readonly byId = new Map<string, SessionState>();
  /** Path-only captures count across sessions (CaptureContent's static counter), apart from compaction's. */
  private pathOnlyCounter = 0;

  constructor(
    private readonly root: string,
    private readonly now: () => Date,
    private readonly nextId: () => string,
    /** The 100 ns ticks below the millisecond of "now" (0 with an injected clock, so tests stay exact). */
    private readonly subMillisecondTicks: () => number = () => 0,
  ) {}

  /** The implicit default session, created with a real 12-hex id on first use (again after it is ended). */
  get defaultSession(): SimSession {
    return this.defaultState();
  }

  private defaultState(): SessionState {
    this.current ??= this.create(true);
    return this.current;
  }

  /** The store's own record of a session it handed out. */
  private stateOf(s: SimSession): SessionState {
    const state = this.byId.get(s.id);
    if (state !== s) throw new Error(`session ${s.id} is not one of this store's`);
    return state;
  }

  private create(isDefault: boolean): SessionState {
    const id = this.nextId();
    const startedAt = this.now();
    const session: SessionState = {
      id,
      startedAt,
      startedAtTicks: this.subMillisecondTicks(),
      artifactDir: path.join(this.root, `${utcStamp(startedAt)}-${id}`),
      isDefault,
      ended: false,
      artifactCounter: 0,
    };
    this.byId.set(id, session);
    return session;
  }

  /** Start a new session; its artifact directory is created at once. */
  async start(): Promise<SimSession> {
    const s = this.create(false);
    await mkdir(s.artifactDir, { recursive: true });
    return s;
  }

  /** A session by id (ended ones included), or undefined. */
  get(id: string): SimSession | undefined {
    return this.byId.get(id);
  }

  /**
   * End a session; true when it was live. Ending the default session drops it, so the next call without a
   * sessionId gets a fresh default session (as the real server does).
   */
  end(session: SimSession): boolean {
    const s = this.stateOf(session);
    if (s.ended) return false;
    s.ended = true;
    if (this.current === s) this.current = undefined;
    return true;
  }

  /** Remember the last tool a session ran (session-status's `lastAction`). */
  noteAction(s: SimSession, tool: string): void {
    this.stateOf(s).lastAction = tool;
  }

  /** Remember a session's last failure, whole (a copy: later changes to `error` do not reach it). */
  noteError(s: SimSession, error: Record<string, unknown>): void {
    this.stateOf(s).lastError = structuredClone(error);
  }

  /** Record the operator's emergency stop in the default session's status (a new stop replaces the last). */
  noteEmergencyStop(stop: { at: string; source: string }): void {
    this.defaultState().emergencyStop = { ...stop };
  }

  /** The status object the wire carries (a deep copy, so later changes do not leak into old replies). */
  status(s: SimSession, commandAccess: Record<string, unknown> = {}): SessionStatus {
    const out: SessionStatus = {
      sessionId: s.id,
      startedAt: roundTripUtc(s.startedAt, s.startedAtTicks),
      artifactDir: s.artifactDir,
      commandAccess,
    };
    if (s.activeTarget) out.activeTarget = s.activeTarget;
    if (s.lastAction) out.lastAction = s.lastAction;
    if (s.lastObservation) out.lastObservation = s.lastObservation;
    if (s.lastError) out.lastError = s.lastError;
    if (s.emergencyStop) out.emergencyStop = s.emergencyStop;
    if (s.ended) out.ended = true;
    const { commandAccess: access, ...rest } = out;
    return structuredClone({ ...rest, commandAccess: access });
  }

  /** Write image bytes into the session's artifact dir as `capture-<UTC ms stamp>-<n>.png`; returns the path. */
  async writeArtifact(session: SimSession, png: Buffer): Promise<string> {
    const s = this.stateOf(session);
    await mkdir(s.artifactDir, { recursive: true });
    s.artifactCounter += 1;
    const file = path.join(s.artifactDir, artifactFileName('capture', this.now(), s.artifactCounter, 'png'));
    await writeFile(file, png);
    return file;
  }

  /** A path-only capture's file: `capture-<UTC ms stamp>-<n>.<ext>` in the session's artifact dir (created on demand). */
  async writePathOnlyArtifact(s: SimSession, bytes: Buffer, extension: string): Promise<string> {
    await mkdir(s.artifactDir, { recursive: true });
    this.pathOnlyCounter += 1;
    const file = path.join(
      s.artifactDir,
      artifactFileName('capture', this.now(), this.pathOnlyCounter, extension),
    );
    await writeFile(file, bytes);
    return file;
  }

  /**
   * Remember a successful observation. An inline capture is compacted to a capture-summary with its PNG
   * written to the artifact dir, so a later error.lastObservation never carries base64.
   */
  async recordObservation(session: SimSession, result: Record<string, unknown>): Promise<void> {
    const s = this.stateOf(session);
    const base64 = result.base64;
    let kept: Record<string, unknown>;
    if (typeof base64 === 'string' && base64.length > 0) {
      kept = { kind: 'capture-summary' };
      for (const key of SUMMARY_KEYS) if (result[key] !== undefined) kept[key] = result[key];
      try {
        kept.artifact = await this.writeArtifact(s, Buffer.from(base64, 'base64'));
      } catch {
        kept.artifactError =
          'The image bytes could not be written to the session artifact directory; only this summary was retained.';
      }
    } else {
      // A path-only capture is kept as is, without kind: the real server does the same.
      kept = result;
    }
    s.lastObservation = structuredClone(kept);
    const window = result.window;
    if (window && typeof window === 'object') s.activeTarget = structuredClone(window as WindowInfo);
  }
}
