/**
 * The matcher: which recorded call answers a live one. Arguments are compared after the live ones went through
 * the recorder's own redaction, with session ids mapped, handles and ids from earlier answers recognized,
 * coordinates within a tolerance, redacted values matching any live value of their kind and typed text by
 * its length; identical calls take their recordings in recorded order.
 */

import { isRecord } from '../util/json.js';
import {
  type RecordedCall,
  type Recording,
  referenceValues,
  type ValueOrigin,
  valueKey,
} from './recording.js';

/** `any`: the first unused recorded call that matches; `strict`: only the next one in recorded order. */
export type ReplayOrder = 'any' | 'strict';

/** One way a live argument differs from the recorded one. */
export interface Difference {
  /** JSON pointer into the arguments (`/tool` when the tool differs). */
  path: string;
  /** The recorded value (redacted as stored). */
  recorded: unknown;
  /** The live value, redacted as the recorder would store it. */
  live: unknown;
  why: string;
}

/** What the matcher decided for one live call. */
export type MatchDecision =
  | { kind: 'matched'; call: RecordedCall; notes: string[] }
  /** Every recorded call like it was used; the last of them answers again. */
  | { kind: 'repeat'; call: RecordedCall; notes: string[] }
  /** Nothing matched; `nearest` is the closest recorded call and why it did not match. */
  | { kind: 'unmatched'; nearest: RecordedCall | null; differences: Difference[] };

/** Options of the matcher. */
export interface MatcherOptions {
  order: ReplayOrder;
  /** Pixels a coordinate may differ by (default 4). */
  tolerance: number;
}

/** Argument keys that hold screen coordinates or sizes. */
const COORD_KEYS = new Set([
  'x',
  'y',
  'width',
  'height',
  'left',
  'top',
  'right',
  'bottom',
  'dx',
  'dy',
  'x1',
  'y1',
  'x2',
  'y2',
]);
/** Argument keys whose whole value is a point, a list of points or a region. */
const COORD_CONTAINERS = new Set(['at', 'from', 'to', 'path', 'points', 'waypoints', 'region', 'bounds']);

const TYPED = /^\[typed text: (\d+) chars\]/;
const REDACTED = '[redacted]';

function pointerOf(path: string, key: string | number): string {
  return `${path}/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/** True when a recorded string stands for a value the recorder took out. */
export function holdsRedaction(s: string): boolean {
  return s.includes(REDACTED) || s.includes('[typed text: ');
}

/**
 * A recorded string with `[redacted]` (any text) and `[typed text: N chars]` (exactly N chars) against a live
 * string: the literal parts must be where the recording has them. Scans with indexOf (arguments are small,
 * but no regex is built from recorded text).
 */
export function redactedStringMatches(recorded: string, live: string): boolean {
  // Split the recorded text into literals and holes.
  type Part = { lit: string } | { any: true } | { exactly: number };
  const parts: Part[] = [];
  let i = 0;
  while (i < recorded.length) {
    const r = recorded.indexOf(REDACTED, i);
    const t = recorded.indexOf('[typed text: ', i);
    const next = [r, t].filter((n) => n >= 0).sort((a, b) => a - b)[0];
    if (next === undefined) {
      parts.push({ lit: recorded.slice(i) });
      break;
    }
    if (next > i) parts.push({ lit: recorded.slice(i, next) });
    if (next === r) {
      parts.push({ any: true });
      i = next + REDACTED.length;
    } else {
      const m = TYPED.exec(recorded.slice(next, next + 40));
      if (!m) {
        parts.push({ lit: '[typed text: ' });
        i = next + '[typed text: '.length;
        continue;
      }
      parts.push({ exactly: Number(m[1]) });
      i = next + m[0].length;
    }
  }
  // Match left to right; `any` takes the shortest run that lets the next literal match (greedy enough for
  // arguments, where a hole is followed by a distinct literal or the end).
  const walk = (pi: number, at: number): boolean => {
    if (pi === parts.length) return at === live.length;
    const p = parts[pi]!;
    if ('lit' in p) return live.startsWith(p.lit, at) && walk(pi + 1, at + p.lit.length);
    if ('exactly' in p) return at + p.exactly <= live.length && walk(pi + 1, at + p.exactly);
    if (pi === parts.length - 1) return at < live.length; // a redacted value was never empty
    const nextPart = parts[pi + 1]!;
    if (!('lit' in nextPart)) return walk(pi + 1, at);
    let from = at;
    for (;;) {
      const hit = live.indexOf(nextPart.lit, from);
      if (hit < 0) return false;
      if (walk(pi + 1, hit)) return true;
      from = hit + 1;
    }
  };
  return walk(0, 0);
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Per-replay matching state: which recordings were used, the session-id map, the values answers handed out. */
export class Matcher {
  private readonly used = new Set<number>();
  /** live id -> recorded id, and back. */
  private readonly liveToRecorded = new Map<string, string>();
  private readonly recordedToLive = new Map<string, string>();
  /** Values recorded answers handed out, by value, for the calls after them (built once). */
  private readonly recordedOrigins = new Map<string, ValueOrigin[]>();
  /** Values the answers served so far handed out, with the recorded place they came from. */
  private readonly servedOrigins = new Map<string, ValueOrigin[]>();

  constructor(
    private readonly recording: Recording,
    private readonly options: MatcherOptions,
  ) {
    for (const call of recording.calls)
      if (call.envelope) referenceValues(call.envelope, call.seq, this.recordedOrigins);
  }

  /** Recorded calls no live call used, in recorded order. */
  unused(): RecordedCall[] {
    return this.recording.calls.filter((c) => !this.used.has(c.seq));
  }

  /** The next recorded call in recorded order that no live call used. */
  nextExpected(): RecordedCall | undefined {
    return this.recording.calls.find((c) => !this.used.has(c.seq));
  }

  /** The live id a recorded session id maps to (itself unless the agent named it otherwise). */
  liveSessionId(recordedId: string): string {
    return this.recordedToLive.get(recordedId) ?? recordedId;
  }

  /** Remember the values an answer handed out, as coming from the recorded call that was served. */
  served(call: RecordedCall, envelope: Record<string, unknown>): void {
    referenceValues(envelope, call.seq, this.servedOrigins);
  }

  /** Decide which recorded call answers `tool` with `liveArgs` (redacted as stored) / `rawArgs` (as sent). */
  decide(tool: string, liveArgs: Record<string, unknown>, rawArgs: Record<string, unknown>): MatchDecision {
    const tryCall = (call: RecordedCall) => {
      const bindings = new Map<string, string>();
      const diffs = this.compareCall(call, tool, liveArgs, rawArgs, bindings);
      return { diffs, bindings };
    };
    const take = (call: RecordedCall, bindings: Map<string, string>, kind: 'matched' | 'repeat') => {
      const notes: string[] = [];
      for (const [live, recorded] of bindings) {
        this.liveToRecorded.set(live, recorded);
        this.recordedToLive.set(recorded, live);
        notes.push(`session id ${live} mapped to the recorded ${recorded}`);
      }
      if (kind === 'matched') this.used.add(call.seq);
      return { kind, call, notes } as MatchDecision;
    };

    if (this.options.order === 'strict') {
      const expected = this.nextExpected();
      if (!expected) return { kind: 'unmatched', nearest: null, differences: [] };
      const { diffs, bindings } = tryCall(expected);
      if (diffs.length === 0) return take(expected, bindings, 'matched');
      return { kind: 'unmatched', nearest: expected, differences: diffs };
    }

    const sameTool = this.recording.calls.filter((c) => c.tool === tool);
    let nearest: { call: RecordedCall; diffs: Difference[]; used: boolean } | null = null;
    let repeat: { call: RecordedCall; bindings: Map<string, string> } | null = null;
    for (const call of sameTool) {
      const used = this.used.has(call.seq);
      const { diffs, bindings } = tryCall(call);
      if (diffs.length === 0 && !used) return take(call, bindings, 'matched');
      if (diffs.length === 0) repeat = { call, bindings };
      // Nearest: fewest differences, unused before used, earlier before later.
      if (
        diffs.length > 0 &&
        (!nearest ||
          diffs.length < nearest.diffs.length ||
          (diffs.length === nearest.diffs.length && nearest.used && !used))
      )
        nearest = { call, diffs, used };
    }
    if (repeat) return take(repeat.call, repeat.bindings, 'repeat');
    if (nearest) return { kind: 'unmatched', nearest: nearest.call, differences: nearest.diffs };
    const next = this.nextExpected() ?? null;
    return {
      kind: 'unmatched',
      nearest: next,
      differences: next
        ? [{ path: '/tool', recorded: next.tool, live: tool, why: `the recording has no ${tool} call` }]
        : [],
    };
  }

  /** Differences between a recorded call and a live one; [] when it matches. */
  private compareCall(
    call: RecordedCall,
    tool: string,
    liveArgs: Record<string, unknown>,
    rawArgs: Record<string, unknown>,
    bindings: Map<string, string>,
  ): Difference[] {
    if (call.tool !== tool) return [{ path: '/tool', recorded: call.tool, live: tool, why: 'another tool' }];
    if (call.args === null)
      return [
        {
          path: '',
          recorded: null,
          live: liveArgs,
          why: 'the recording dropped these arguments (log size limit): nothing to compare',
        },
      ];
    const out: Difference[] = [];
    this.compareValue(call, call.args, liveArgs, rawArgs, '', null, false, bindings, out);
    return out;
  }

  private compareValue(
    call: RecordedCall,
    rec: unknown,
    live: unknown,
    raw: unknown,
    path: string,
    key: string | null,
    coord: boolean,
    bindings: Map<string, string>,
    out: Difference[],
  ): void {
    const diff = (why: string): void => {
      out.push({ path, recorded: rec, live, why });
    };
    if (path === '/sessionId') {
      this.compareSession(rec, live, bindings, diff);
      return;
    }
    if (typeof rec === 'string' && holdsRedaction(rec)) {
      if (live === rec) return;
      if (typeof raw === 'string' && redactedStringMatches(rec, raw)) return;
      if (typeof live === 'string' && redactedStringMatches(rec, live)) return;
      const at = rec.indexOf('[typed text: ');
      const typed = at >= 0 ? TYPED.exec(rec.slice(at, at + 40)) : null;
      diff(
        typed
          ? `typed text of another length (recorded ${typed[1]} chars)`
          : 'a redacted value that the live one does not fit',
      );
      return;
    }
    if (typeof rec === 'number' && typeof live === 'number') {
      if (rec === live) return;
      if (coord && Math.abs(rec - live) <= this.options.tolerance) return;
      if (key !== null && this.sameOrigin(call, rec, live)) return;
      diff(
        coord
          ? `coordinate off by ${Math.abs(rec - live)} (tolerance ${this.options.tolerance})`
          : this.refWhy(call, rec, live),
      );
      return;
    }
    if (typeof rec === 'string' && typeof live === 'string') {
      // A value stored as sent (a log written with keepTypedText, or before its key held typed text) matches
      // the value as sent.
      if (rec === live || rec === raw) return;
      if (key !== null && this.sameOrigin(call, rec, live)) return;
      diff(this.refWhy(call, rec, live));
      return;
    }
    if (Array.isArray(rec) && Array.isArray(live)) {
      if (rec.length !== live.length) {
        diff(`${live.length} items, the recording has ${rec.length}`);
        return;
      }
      const rawArr = Array.isArray(raw) ? raw : [];
      for (let i = 0; i < rec.length; i++)
        this.compareValue(call, rec[i], live[i], rawArr[i], pointerOf(path, i), key, coord, bindings, out);
      return;
    }
    if (isRecord(rec) && isRecord(live)) {
      const rawObj = isRecord(raw) ? raw : {};
      for (const k of Object.keys(rec)) {
        const p = pointerOf(path, k);
        if (!Object.hasOwn(live, k)) {
          out.push({ path: p, recorded: rec[k], live: undefined, why: 'missing: the recorded call had it' });
          continue;
        }
        const inCoord = coord || COORD_CONTAINERS.has(k) || COORD_KEYS.has(k);
        this.compareValue(call, rec[k], live[k], rawObj[k], p, k, inCoord, bindings, out);
      }
      for (const k of Object.keys(live))
        if (!Object.hasOwn(rec, k))
          out.push({
            path: pointerOf(path, k),
            recorded: undefined,
            live: live[k],
            why: 'extra: the recorded call had no such argument',
          });
      return;
    }
    if (!same(rec, live)) diff('another value');
  }

  /** sessionId: the recorded id, the live id already mapped to it, or a new id that maps to it now. */
  private compareSession(
    rec: unknown,
    live: unknown,
    bindings: Map<string, string>,
    diff: (why: string) => void,
  ): void {
    if (typeof rec !== 'string' || typeof live !== 'string') {
      if (!same(rec, live)) diff('another session id');
      return;
    }
    const mapped = this.liveToRecorded.get(live);
    if (mapped !== undefined) {
      if (mapped !== rec) diff(`this live session id stands for the recorded ${mapped}`);
      return;
    }
    const recLive = this.recordedToLive.get(rec);
    if (live === rec && (recLive === undefined || recLive === rec)) return;
    if (recLive !== undefined) {
      diff(`the recorded session ${rec} is ${recLive} in this replay`);
      return;
    }
    if (this.recording.sessionIds.has(live)) {
      diff('another recorded session');
      return;
    }
    // A session id the replay never handed out: it stands for the recorded one from now on.
    if (bindings.get(live) === undefined && ![...bindings.values()].includes(rec)) bindings.set(live, rec);
  }

  /** True when both values came out of the same place of a recorded answer (a handle passed back). */
  private sameOrigin(call: RecordedCall, rec: number | string, live: number | string): boolean {
    const recOrigins = (this.recordedOrigins.get(valueKey(rec)) ?? []).filter((o) => o.seq < call.seq);
    if (recOrigins.length === 0) return false;
    const liveOrigins = this.servedOrigins.get(valueKey(live)) ?? [];
    return liveOrigins.some((l) => recOrigins.some((r) => r.seq === l.seq && r.pointer === l.pointer));
  }

  private refWhy(call: RecordedCall, rec: number | string, live: number | string): string {
    const recOrigin = (this.recordedOrigins.get(valueKey(rec)) ?? []).find((o) => o.seq < call.seq);
    const liveOrigin = (this.servedOrigins.get(valueKey(live)) ?? [])[0];
    if (!recOrigin) return 'another value';
    return (
      `another value: the recorded ${JSON.stringify(rec)} came from #${recOrigin.seq} at ${recOrigin.pointer}` +
      (liveOrigin
        ? `, the live one from #${liveOrigin.seq} at ${liveOrigin.pointer}`
        : ', the live one from no answer of this replay')
    );
  }
}
