/**
 * The run as a sequence for the player and run.gif: each new image is a frame, and each step shows one call
 * on a frame (the image it made, or the latest image of the window it acted on) with its marks. Built from
 * the call rows in seq order (the page's one pass over the log) and the artifacts read before. Pure: no I/O.
 */
import { isRasterArtifact } from '../../artifacts/image-file.js';
import type { ArtifactRow, CallRow } from '../../store/schema.js';
import { isRecord } from '../../util/json.js';
import { CallJson } from '../call-json.js';
import {
  endpointOnScreen,
  type FrameGeometry,
  hasWindowTarget,
  mapPoint,
  mapRect,
  type Point,
  pointOf,
  type Rect,
  rectOf,
  rectText,
  sameRect,
} from './frame-map.js';
import { type BoxTone, label, MAX_CAPTION_CHARS, MAX_MARKS, type Mark } from './marks.js';

/** One image of the run. */
export interface PlayerFrame {
  /** The image's key (its path in the session dir). */
  key: string;
  /** sha256 of its bytes as its artifact row recorded it (names its kept thumbnails), else null. */
  sha256: string | null;
  /** The call that first showed it. */
  seq: number;
  /** `image`, or `gif` for a `record` recording (shown as one item, not played frame by frame). */
  kind: 'image' | 'gif';
  /** The image's size in pixels (0 when unknown). */
  width: number;
  height: number;
  /** The window it shows, when known: its title and handle. */
  window: string | null;
  handle: number | null;
  geometry: FrameGeometry;
}

/** One step of the player: a call shown on a frame. */
export interface PlayerStep {
  seq: number;
  tool: string;
  status: string;
  /** Index into the frames. */
  frame: number;
  /** Milliseconds since the first step's call started. */
  at: number;
  failing: boolean;
  /** One line: `#10 invoke Save (automationid=1)`. */
  title: string;
  marks: Mark[];
}

/** The player's data. */
export interface PlayerModel {
  frames: PlayerFrame[];
  steps: PlayerStep[];
  /** Steps left out to stay within MAX_STEPS (the ones farthest from the failing call). */
  stepsOmitted: number;
}

/** What the collector needs besides the rows. */
export interface PlayerInputs {
  /** Artifacts per call. */
  artifactsBySeq: ReadonlyMap<number, readonly ArtifactRow[]>;
  /** Each image's key and the first call that showed it. */
  firstSeqOfImage: ReadonlyMap<string, number>;
  /** The key of an artifact row's file, or null when it has no file in the session dir. */
  keyOf: (artifact: ArtifactRow) => string | null;
  /** The server's version (from the session's environment), which decides how target pixels are read. */
  serverVersion: string | null;
  failingSeq: number | null;
}

/** Steps the page and the GIF get at most; the ones nearest the failing call are kept. */
export const MAX_STEPS = 400;
/** Steps kept before the failing call's (the rest of MAX_STEPS after it). */
const STEPS_BEFORE_FAILING = Math.floor(MAX_STEPS * 0.75);
/** Envelopes longer than this are not parsed for marks (a big query tree); their step says so. */
const MAX_ENVELOPE_CHARS = 1_000_000;
/** Elements kept from the last query of each window, to show an ambiguous selector's candidates. */
const MAX_TREE_ELEMENTS = 5000;
const MAX_TREES = 16;

/** An element as query/find results give it (screen pixels). */
interface Element {
  rect: Rect;
  name?: string;
  automationId?: string;
  className?: string;
  offscreen: boolean;
}

/** A window as results give it (WindowInfo). */
interface WindowFacts {
  handle: number | null;
  title: string | null;
  rect: Rect;
}

type Obj = Record<string, unknown>;

/**
 * A mark not drawn yet: each Drawing call makes exactly one mark (or the note that stands for it), but only
 * the steps the model keeps (MAX_STEPS of them) have theirs made, labels and mapping included.
 */
type MarkOp = () => Mark;

/** A step as collected: its title and marks made only if the step is kept. */
interface CollectedStep extends Omit<PlayerStep, 'title' | 'marks'> {
  /** The title before `label` flattens and clips it. */
  titleText: string;
  marks: MarkOp[];
}

/** A parsed value as an object, or null. */
function record(v: unknown): Obj | null {
  return isRecord(v) ? v : null;
}

function windowFacts(value: unknown): WindowFacts | null {
  const rect = rectOf(value);
  if (!rect || !isRecord(value)) return null;
  return {
    handle: typeof value.handle === 'number' ? value.handle : null,
    title: typeof value.title === 'string' ? value.title : null,
    rect,
  };
}

function str(o: Obj | null | undefined, k: string): string | null {
  const v = o?.[k];
  return typeof v === 'string' && v !== '' ? v : null;
}

/** `by=value` as the log holds them (MCEC's `by` defaults to name). */
function selectorText(o: Obj | null): string {
  const value = str(o, 'value') ?? '';
  return `${str(o, 'by') ?? 'name'}=${JSON.stringify(value)}`;
}

function matches(e: Element, by: string, value: string): boolean {
  const b = by.toLowerCase();
  if (b === 'automationid') return e.automationId === value;
  if (b === 'classname') return e.className === value;
  return e.name === value;
}

function elementOf(value: unknown): Element | null {
  const rect = rectOf(value);
  if (!rect || !isRecord(value)) return null;
  return {
    rect,
    name: typeof value.name === 'string' ? value.name : undefined,
    automationId: typeof value.automationId === 'string' ? value.automationId : undefined,
    className: typeof value.className === 'string' ? value.className : undefined,
    offscreen: value.isOffscreen === true,
  };
}

/** A tree's elements, depth first, at most `max`. */
function flatten(root: unknown, max: number): Element[] {
  const out: Element[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0 && out.length < max) {
    const node = stack.pop();
    const e = elementOf(node);
    if (e) out.push(e);
    const children = isRecord(node) ? node.children : null;
    if (Array.isArray(children)) for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return out;
}

/** The capture container of an image: the result, or the error's partialResult. */
function captureContainer(env: Obj | null): Obj | null {
  if (!env) return null;
  if (isRecord(env.result)) return env.result;
  const err = isRecord(env.error) ? env.error : null;
  return err && isRecord(err.partialResult) ? err.partialResult : null;
}

function isRecordingKey(key: string): boolean {
  return key.toLowerCase().endsWith('.gif');
}

const TOOLS_WITH_MARKS = new Set([
  'click',
  'drag',
  'focus',
  'invoke',
  'find',
  'wait-for',
  'query',
  'send_command',
  'window',
  'clipboard',
]);

/** Builds the player model from the call rows, handed in seq order. */
export class PlayerCollector {
  private readonly frames: PlayerFrame[] = [];
  /** The steps from `stepsLeftOut` on; those before it are out of every window `finish` could keep. */
  private readonly steps: CollectedStep[] = [];
  private stepsLeftOut = 0;
  /** The index of the first step of the failing call, once collected. */
  private failingStep: number | null = null;
  /** The latest frame of each window (by handle, then by title), and the latest frame of all. */
  private readonly frameOfHandle = new Map<number, number>();
  private readonly frameOfTitle = new Map<string, number>();
  /** The latest rect of each window seen in any result (a frame whose window moved since is not mapped). */
  private readonly windowRects = new Map<number, Rect>();
  /** The latest facts of each window by title (lower case): an action names its window by a title substring. */
  private readonly windowsByTitle = new Map<string, WindowFacts>();
  /** The last found element per window target and selector (an invoke's box comes from it). */
  private readonly foundElements = new Map<string, Element>();
  /** The last query tree of each window target, flattened (an ambiguous selector's candidates). */
  private readonly trees = new Map<string, Element[]>();
  /** Where the pointer was last put (mouse:mtp, a click): raw mouse clicks land there. */
  private pointer: Point | null = null;
  private startMs: number | null = null;

  constructor(private readonly inputs: PlayerInputs) {}

  /** Take the next call row (seq order); `json`: its parsed JSON, shared with the row's other readers. */
  add(row: CallRow, json: CallJson = new CallJson(row)): void {
    const newFrames = this.framesOf(row);
    const wantsMarks = TOOLS_WITH_MARKS.has(row.tool) || row.seq === this.inputs.failingSeq;
    if (newFrames.length === 0 && !wantsMarks) return;
    const env = record(json.envelope(MAX_ENVELOPE_CHARS));
    const args = record(json.args(MAX_ENVELOPE_CHARS)) ?? {};
    if (env) this.learnWindows(env);
    if (newFrames.length > 0) {
      newFrames.forEach((f, i) => {
        const index = this.addFrame(row, f, args, env);
        this.pushStep(row, index, i === 0 ? this.failureCaption(row) : []);
      });
      return;
    }
    this.actionStep(row, args, env);
  }

  /** The model, its steps bounded around the failing call. */
  finish(): PlayerModel {
    const total = this.stepsLeftOut + this.steps.length;
    let steps = this.steps;
    let omitted = 0;
    if (total > MAX_STEPS) {
      const centre = this.failingStep ?? total - 1;
      const from = Math.max(0, Math.min(centre - STEPS_BEFORE_FAILING, total - MAX_STEPS));
      if (from < this.stepsLeftOut) throw new Error('player: a kept step was left out while collecting');
      omitted = total - MAX_STEPS;
      steps = steps.slice(from - this.stepsLeftOut, from - this.stepsLeftOut + MAX_STEPS);
    }
    // Only the frames the kept steps show, renumbered.
    const used = [...new Set(steps.map((s) => s.frame))].sort((a, b) => a - b);
    const renumber = new Map(used.map((old, i) => [old, i]));
    return {
      frames: used.map((i) => this.frames[i]!),
      steps: steps.map((s) => ({
        seq: s.seq,
        tool: s.tool,
        status: s.status,
        frame: renumber.get(s.frame)!,
        at: s.at,
        failing: s.failing,
        title: label(s.titleText),
        marks: s.marks.map((mark) => mark()),
      })),
      stepsOmitted: omitted,
    };
  }

  /** The new images of this call (first shown here; a server's lastObservation copy is not a new screen). */
  private framesOf(row: CallRow): Array<{ key: string; artifact: ArtifactRow }> {
    const out: Array<{ key: string; artifact: ArtifactRow }> = [];
    for (const a of this.inputs.artifactsBySeq.get(row.seq) ?? []) {
      if (a.role === 'lastObservation') continue;
      const key = this.inputs.keyOf(a);
      if (!key || this.inputs.firstSeqOfImage.get(key) !== row.seq) continue;
      // An SVG or icon kept as it came is no screen: run.gif never decodes it (src/artifacts, notRaster).
      if (!isRasterArtifact(key)) continue;
      if (out.some((o) => o.key === key)) continue;
      out.push({ key, artifact: a });
    }
    return out;
  }

  private addFrame(
    row: CallRow,
    f: { key: string; artifact: ArtifactRow },
    args: Obj,
    env: Obj | null,
  ): number {
    const gif = isRecordingKey(f.key);
    const container = f.artifact.role === 'nested' ? null : captureContainer(env);
    const win = windowFacts(container?.window);
    const width = f.artifact.width ?? (typeof container?.width === 'number' ? container.width : 0);
    const height = f.artifact.height ?? (typeof container?.height === 'number' ? container.height : 0);
    const region = hasWindowTarget(args) ? null : rectOf(args);
    const geometry: FrameGeometry = { screen: null, image: { width, height } };
    if (gif) geometry.unknown = 'a GIF recording';
    else if (win) geometry.screen = win.rect;
    else if (region && row.tool === 'capture') geometry.screen = region;
    else geometry.unknown = 'the capture does not say where its window was';
    const index = this.frames.length;
    this.frames.push({
      key: f.key,
      sha256: f.artifact.sha256,
      seq: row.seq,
      kind: gif ? 'gif' : 'image',
      width,
      height,
      window: win?.title ?? (typeof args.window === 'string' ? args.window : null),
      handle: win?.handle ?? null,
      geometry,
    });
    if (!gif) {
      if (win?.handle != null) this.frameOfHandle.set(win.handle, index);
      const title = win?.title ?? (typeof args.window === 'string' ? args.window : null);
      if (title) this.frameOfTitle.set(title.toLowerCase(), index);
      if (geometry.screen && !win) this.frameOfTitle.set('\u0000screen', index);
    }
    return index;
  }

  private pushStep(row: CallRow, frame: number, marks: MarkOp[], what = ''): void {
    const failing = row.seq === this.inputs.failingSeq;
    if (failing && this.failingStep === null) this.failingStep = this.stepsLeftOut + this.steps.length;
    if (this.steps.length >= 2 * MAX_STEPS) this.leaveOutUnkept();
    const started = Date.parse(row.started_at);
    if (this.startMs === null && Number.isFinite(started)) this.startMs = started;
    const at = Number.isFinite(started) && this.startMs !== null ? Math.max(0, started - this.startMs) : 0;
    this.steps.push({
      seq: row.seq,
      tool: row.tool,
      status: row.status,
      frame,
      at,
      failing,
      titleText: `#${row.seq} ${row.tool}${what ? ` ${what}` : ''}${row.error_code ? ` · ${row.error_code}` : ''}`,
      marks: marks.slice(0, MAX_MARKS),
    });
  }

  /**
   * Let go of the steps no end of the run can keep (a long session makes ten thousand and more): `finish`
   * keeps MAX_STEPS from at least STEPS_BEFORE_FAILING before the failing step, or the last MAX_STEPS; a
   * failing step not collected yet comes after every step so far.
   */
  private leaveOutUnkept(): void {
    const total = this.stepsLeftOut + this.steps.length;
    const lastWindow = total - MAX_STEPS;
    const firstKept =
      this.failingStep === null ? lastWindow : Math.min(this.failingStep - STEPS_BEFORE_FAILING, lastWindow);
    if (firstKept <= this.stepsLeftOut) return;
    this.steps.splice(0, firstKept - this.stepsLeftOut);
    this.stepsLeftOut = firstKept;
  }

  private failureCaption(row: CallRow): MarkOp[] {
    if (row.status === 'ok' || !row.error_code) return [];
    const text = `${row.tool} failed: ${row.error_code}`;
    return [() => ({ kind: 'caption', text: label(text, MAX_CAPTION_CHARS), tone: 'failed' })];
  }

  /** Remember every window rect a result shows (WindowInfo in result.window, or a windows list). */
  private learnWindows(env: Obj): void {
    const seen = (v: unknown) => {
      const w = windowFacts(v);
      if (w?.handle != null) this.windowRects.set(w.handle, w.rect);
      if (w?.title) {
        const key = w.title.toLowerCase();
        this.windowsByTitle.delete(key); // re-inserted last: the newest is found first from the end
        this.windowsByTitle.set(key, w);
      }
    };
    const result = isRecord(env.result) ? env.result : null;
    seen(result?.window);
    if (Array.isArray(result?.windows)) for (const w of result.windows.slice(0, 200)) seen(w);
    const err = isRecord(env.error) ? env.error : null;
    if (err && isRecord(err.partialResult)) {
      seen(err.partialResult.window);
      seen(err.partialResult);
    }
  }

  /** The frame an action is drawn on: the latest image of its window, else the latest image of all. */
  private frameFor(win: WindowFacts | null, args: Obj): { index: number; sameWindow: boolean } | null {
    const byHandle = win?.handle != null ? this.frameOfHandle.get(win.handle) : undefined;
    if (byHandle !== undefined) return { index: byHandle, sameWindow: true };
    const title = win?.title ?? str(args, 'window');
    const byTitle = title ? this.frameOfTitle.get(title.toLowerCase()) : undefined;
    if (byTitle !== undefined) return { index: byTitle, sameWindow: true };
    for (let i = this.frames.length - 1; i >= 0; i--) {
      if (this.frames[i]!.kind === 'image') {
        const screenFrame = this.frameOfTitle.get('\u0000screen') === i;
        return { index: i, sameWindow: screenFrame };
      }
    }
    return null;
  }

  /** The window an action names by `window` (a title substring, as MCEC matches it), from earlier results. */
  private windowNamed(args: Obj): WindowFacts | null {
    const wanted = str(args, 'window')?.toLowerCase();
    if (!wanted) return null;
    const exact = this.windowsByTitle.get(wanted);
    if (exact) return exact;
    const all = [...this.windowsByTitle.entries()];
    for (let i = all.length - 1; i >= 0; i--) if (all[i]![0].includes(wanted)) return all[i]![1];
    return null;
  }

  /** A step for an action or observation on the frame it acted on. */
  private actionStep(row: CallRow, args: Obj, env: Obj | null): void {
    const result = env && isRecord(env.result) ? env.result : null;
    const err = env && isRecord(env.error) ? env.error : null;
    const win =
      windowFacts(result?.window) ?? windowFacts(isRecord(err?.partialResult) ? err.partialResult : null);
    const acted = win ?? this.windowNamed(args);
    const target = this.frameFor(acted, args);
    if (!target) return; // nothing seen yet to draw on
    const frame = this.frames[target.index]!;
    const draw = new Drawing(frame, this.windowRects, target.sameWindow);
    // Acting in a window this image does not show: outline where that window was, for the marks inside it.
    if (!target.sameWindow && acted?.title) {
      draw.windowBox(acted, `'${acted.title}' · another window: where it was, not in this image`);
    }
    const what = this.describe(row, args, env, result, err, acted, draw);
    if (!env && row.envelope && row.envelope.length > MAX_ENVELOPE_CHARS) {
      draw.note('its envelope is too large to read for the overlay');
    }
    if (row.status !== 'ok' && row.error_code) {
      draw.caption(`${row.tool} failed: ${row.error_code}`, 'failed');
    }
    if (draw.marks.length === 0 && row.seq !== this.inputs.failingSeq) return;
    this.pushStep(row, target.index, draw.marks, what);
  }

  /** The marks of one call, by tool; returns the words for the step's title. */
  private describe(
    row: CallRow,
    args: Obj,
    env: Obj | null,
    result: Obj | null,
    err: Obj | null,
    win: WindowFacts | null,
    draw: Drawing,
  ): string {
    const targetKey = (str(args, 'window') ?? String(args.handle ?? win?.handle ?? '')).toLowerCase();
    const version = this.inputs.serverVersion;
    switch (row.tool) {
      case 'click': {
        const at = isRecord(args.at) ? args.at : null;
        const button = str(result, 'button') ?? str(args, 'button') ?? 'left';
        const count =
          typeof result?.count === 'number' ? result.count : typeof args.count === 'number' ? args.count : 1;
        const gesture = `${button}${count === 2 ? ' double-click' : count > 2 ? ` click x${count}` : ' click'}`;
        const point = this.pointOfAction(result?.at, at, args, win, version);
        if (point.ok) {
          this.pointer = point;
          draw.point(point, gesture, row.status !== 'ok');
        } else if (at && str(at, 'value')) {
          draw.elementBox(
            this.foundElements.get(`${targetKey}|${selectorText(at)}`) ?? null,
            `${gesture} ${selectorText(at)}`,
            row.status === 'ok' ? 'found' : 'missing',
          );
        } else draw.note(`${gesture} not drawn: ${point.reason}`);
        return gesture;
      }
      case 'drag': {
        const from = this.pointOfAction(
          result?.from,
          isRecord(args.from) ? args.from : null,
          args,
          win,
          version,
        );
        const to = this.pointOfAction(result?.to, isRecord(args.to) ? args.to : null, args, win, version);
        if (from.ok && to.ok) draw.arrow(from, to, 'drag', row.status !== 'ok');
        else draw.note(`drag not drawn: ${from.ok ? (to as { reason: string }).reason : from.reason}`);
        return 'drag';
      }
      case 'focus': {
        const element = elementOf(result?.element);
        const at = pointOf(result?.at) ?? (isRecord(args.at) ? pointOf(args.at) : null); // focus's `at` is absolute
        if (element)
          draw.elementBox(element, `focus ${selectorText(isRecord(args.at) ? args.at : null)}`, 'found');
        else if (at) draw.point(at, 'focus at', row.status !== 'ok');
        return 'focus';
      }
      case 'find':
      case 'wait-for':
        return this.findMarks(row, args, result, err, targetKey, draw);
      case 'invoke': {
        const sel = selectorText(args);
        const action = str(args, 'action') ?? 'invoke';
        const element = this.foundElements.get(`${targetKey}|${sel}`) ?? null;
        const ok = row.status === 'ok';
        draw.elementBox(
          element,
          `${action} ${sel}${ok ? (result?.modalPending ? ' · opened a dialog' : action === 'invoke' ? ' · invoked' : ' · done') : ''}`,
          ok ? 'found' : 'missing',
        );
        if (!element) draw.note(`no earlier find of ${sel} in this window gives its rectangle`);
        const text = str(args, 'text');
        if (text) draw.caption(`set value: ${text}`);
        return action === 'invoke' ? sel : `${action} ${sel}`;
      }
      case 'query': {
        const tree = result?.tree;
        if (tree !== undefined) {
          if (this.trees.size >= MAX_TREES && !this.trees.has(targetKey))
            this.trees.delete(this.trees.keys().next().value!);
          this.trees.set(targetKey, flatten(tree, MAX_TREE_ELEMENTS));
        }
        const nodes =
          typeof result?.nodeCount === 'number'
            ? `${result.nodeCount} nodes${result.truncated ? ', truncated' : ''}`
            : '';
        if (nodes) draw.caption(`query: ${nodes}`);
        return nodes ? `(${nodes})` : '';
      }
      case 'send_command':
        return this.rawCommand(String(args.command ?? ''), row, draw);
      case 'window': {
        const action = str(args, 'action') ?? 'foreground';
        if (win) draw.windowBox(win, `window ${action} → ${rectText(win.rect)}`);
        return action;
      }
      case 'clipboard': {
        const action = str(args, 'action') ?? '';
        const text = str(args, 'text');
        draw.caption(`clipboard ${action}${text ? `: ${text}` : ''}`);
        return action;
      }
      default:
        void env;
        return '';
    }
  }

  /** A find/wait-for: the element found, the candidates of an ambiguous selector, or not found. */
  private findMarks(
    row: CallRow,
    args: Obj,
    result: Obj | null,
    err: Obj | null,
    targetKey: string,
    draw: Drawing,
  ): string {
    const sel = selectorText(args);
    const element = elementOf(result?.element);
    if (result && result.found === true && element) {
      this.foundElements.set(`${targetKey}|${sel}`, element);
      draw.elementBox(element, `${sel} · found`, 'found');
      return sel;
    }
    const code = typeof err?.code === 'string' ? err.code : (row.error_code ?? '');
    const ambiguous = /^selector-matched-(\d+)$/.exec(code);
    if (ambiguous) {
      const n = Number(ambiguous[1]);
      const tree = this.trees.get(targetKey) ?? [];
      const value = str(args, 'value') ?? '';
      const candidates = tree.filter((e) => matches(e, str(args, 'by') ?? 'name', value));
      candidates.slice(0, MAX_MARKS - 2).forEach((e, i) => {
        draw.elementBox(
          e,
          `${sel} · ambiguous: candidate ${i + 1} of ${n}${e.offscreen ? ' (off-screen)' : ''}`,
          'ambiguous',
        );
      });
      if (candidates.length < n) {
        draw.note(
          `${sel} matched ${n} elements; ${candidates.length === 0 ? 'none' : `only ${candidates.length}`} of them in the last query of this window`,
        );
      }
      return sel;
    }
    draw.caption(`${sel} · not found`, 'failed');
    return sel;
  }

  /** The screen point of a click/drag endpoint: the result's (absolute), else from the arguments. */
  private pointOfAction(
    fromResult: unknown,
    endpoint: Obj | null,
    args: Obj,
    win: WindowFacts | null,
    version: string | null,
  ): ({ ok: true } & Point) | { ok: false; reason: string } {
    const done = pointOf(fromResult);
    if (done) return { ok: true, ...done };
    const pixel = endpoint ? pointOf(endpoint) : null;
    if (!pixel) return { ok: false, reason: 'no pixel recorded' };
    const rect =
      win?.rect ?? (typeof args.handle === 'number' ? (this.windowRects.get(args.handle) ?? null) : null);
    return endpointOnScreen(pixel, args, version, rect);
  }

  /** MCEC's raw built-ins: typed text and keys as captions, `mouse:` points and drags. */
  private rawCommand(command: string, row: CallRow, draw: Drawing): string {
    const lower = command.toLowerCase();
    const chars = lower.indexOf('chars:');
    if (chars !== -1) {
      draw.caption(`typed: ${command.slice(chars + 'chars:'.length)}`);
      return 'typed text';
    }
    if (lower.startsWith('mouse:')) {
      const [action = '', ...rest] = command.slice('mouse:'.length).split(',');
      const nums = rest.map((n) => Number(n.trim()));
      const a = action.trim().toLowerCase();
      if ((a === 'mtp' || a === 'drag') && nums.length >= 2 && nums.every(Number.isFinite)) {
        const points: Point[] = [];
        for (let i = 0; i + 1 < nums.length; i += 2) points.push({ x: nums[i]!, y: nums[i + 1]! });
        if (a === 'mtp') {
          this.pointer = points[0]!;
          draw.point(points[0]!, 'pointer moved', row.status !== 'ok');
        } else draw.arrow(points[0]!, points.at(-1)!, 'drag', row.status !== 'ok');
        return a;
      }
      const button = { l: 'left', r: 'right', m: 'middle', x: 'x' }[a[0] ?? ''];
      if (button && /^[lrmx]b(c|dc|d|u)$/.test(a)) {
        const what = `${button} ${a.endsWith('dc') ? 'double-click' : a.endsWith('c') ? 'click' : a.endsWith('d') ? 'button down' : 'button up'}`;
        if (this.pointer) draw.point(this.pointer, `${what} (at the pointer)`, row.status !== 'ok');
        else draw.caption(`${what} at the pointer (its position is not recorded)`);
        return what;
      }
      draw.caption(`mouse: ${action}`);
      return 'mouse';
    }
    if (command.trim() !== '') draw.caption(`keys: ${command}`);
    return 'keys';
  }
}

/**
 * The marks of one step on its frame: screen geometry mapped, or a note where it cannot be. Each call adds one
 * mark, made when the step is kept (`MarkOp`); what it depends on is fixed now (the frame, whether its window
 * moved since the image), so it comes out as if made at once.
 */
class Drawing {
  readonly marks: MarkOp[] = [];
  /** A refusal that holds for every mark on this frame (its window moved since the image), else null. */
  private readonly refusal: { ok: false; reason: string } | null;

  constructor(
    private readonly frame: PlayerFrame,
    windowRects: ReadonlyMap<number, Rect>,
    readonly sameWindow: boolean,
  ) {
    const { screen } = frame.geometry;
    const now = frame.handle === null ? undefined : windowRects.get(frame.handle);
    this.refusal =
      !screen || !now || sameRect(now, screen)
        ? null
        : {
            ok: false,
            reason: `the window moved since this image (${rectText(screen)} then, ${rectText(now)} now)`,
          };
  }

  point(p: Point, what: string, failed: boolean): void {
    const { refusal, frame } = this;
    this.marks.push(() => {
      const m = refusal ?? mapPoint(frame.geometry, p);
      if (!m.ok) return captionMark(`${what} at ${p.x},${p.y} not drawn: ${m.reason}`, 'note');
      return { kind: 'point', x: m.x, y: m.y, label: label(`${what} at ${p.x},${p.y}`), failed };
    });
  }

  arrow(from: Point, to: Point, what: string, failed: boolean): void {
    const { refusal, frame } = this;
    this.marks.push(() => {
      const a = refusal ?? mapPoint(frame.geometry, from);
      const b = refusal ?? mapPoint(frame.geometry, to);
      if (!a.ok || !b.ok) {
        const reason = !a.ok ? a.reason : !b.ok ? b.reason : '';
        return captionMark(`${what} ${from.x},${from.y} → ${to.x},${to.y} not drawn: ${reason}`, 'note');
      }
      return {
        kind: 'arrow',
        x1: a.x,
        y1: a.y,
        x2: b.x,
        y2: b.y,
        label: label(`${what} ${from.x},${from.y} → ${to.x},${to.y}`),
        failed,
      };
    });
  }

  elementBox(e: Element | null, what: string, tone: BoxTone): void {
    if (!e) {
      this.caption(what, tone === 'missing' ? 'failed' : undefined);
      return;
    }
    this.box(e.rect, what, tone);
  }

  windowBox(w: WindowFacts, what: string): void {
    this.box(w.rect, what, 'window');
  }

  caption(text: string, tone?: 'note' | 'failed'): void {
    this.marks.push(() => captionMark(text, tone));
  }

  note(text: string): void {
    this.caption(text, 'note');
  }

  private box(rect: Rect, what: string, tone: BoxTone): void {
    const { refusal, frame } = this;
    const elsewhere = !this.sameWindow;
    this.marks.push(() => {
      const m = refusal ?? mapRect(frame.geometry, rect);
      if (!m.ok) return captionMark(`${what} not drawn: ${m.reason}`, 'note');
      return { kind: 'box', ...rounded(m), label: label(what), tone, elsewhere };
    });
  }
}

/** A line of text under the image. */
function captionMark(text: string, tone?: 'note' | 'failed'): Mark {
  return { kind: 'caption', text: label(text, MAX_CAPTION_CHARS), ...(tone ? { tone } : {}) };
}

function rounded(r: Rect): Rect {
  const q = (n: number) => Math.round(n * 10) / 10;
  return { x: q(r.x), y: q(r.y), width: q(r.width), height: q(r.height) };
}
