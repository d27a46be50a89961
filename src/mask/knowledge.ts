/**
 * What the recorder knows of the screen, learned from each call in order: where windows and elements are
 * (query, find, wait-for, focus and every WindowInfo a result carries), which control has focus, and which
 * elements hold a secret (typed or pasted into, set with invoke setvalue, or named like a secret field).
 * One per session; kept in memory only (it holds screen geometry and UI names, never typed text).
 */
import type { Envelope } from '../contract/types.js';
import { secretKeyMatcher } from '../redact/secret-keys.js';
import { isRecord } from '../util/json.js';
import type { ElementSelector, Rect, WindowSelector } from './types.js';

/** A window as last seen (screen pixels). */
export interface KnownWindow {
  handle: number;
  title: string;
  className: string;
  processName: string;
  rect: Rect;
  seq: number;
}

/** An element as last seen: its screen rect and its window's rect at that moment. */
export interface KnownElement {
  controlType: string;
  name?: string;
  automationId?: string;
  className?: string;
  rect: Rect;
  handle: number;
  windowRect: Rect;
  /** The call that reported it. */
  seq: number;
}

export type SecretKind = 'typed' | 'pasted' | 'field';

/** Where a secret is: an element (best), a window (its element unknown), or nowhere known. */
export interface SecretPlace {
  kind: SecretKind;
  element?: KnownElement;
  handle?: number;
  /** The window as the call named it, when no known window matched it. */
  selector?: WindowSelector;
  /** Typed while nothing known had focus: it may be anywhere. */
  unplaced?: boolean;
  seq: number;
}

/** One call, as the knowledge learns from it. */
export interface LearnedCall {
  seq: number;
  tool: string;
  args: unknown;
  envelope: Envelope | undefined;
}

export interface KnowledgeOptions {
  /** Learn typed, set and pasted text (default true). */
  typedText?: boolean;
  /** Learn Edit elements named like a secret key (default true). */
  secretFields?: boolean;
  /** The redactor's user secret keys, on top of the default list. */
  secretKeys?: ReadonlyArray<string | RegExp>;
}

const MAX_WINDOWS = 256;
const MAX_ELEMENTS_PER_WINDOW = 4000;
const MAX_SECRETS = 512;
/** Control types that hold text typed into them. */
const TEXT_BOXES = new Set(['Edit', 'Document', 'ComboBox']);

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function rectOf(v: Record<string, unknown>): Rect | undefined {
  const x = num(v.x);
  const y = num(v.y);
  const width = num(v.width);
  const height = num(v.height);
  if (x === undefined || y === undefined || width === undefined || height === undefined) return undefined;
  if (width < 0 || height < 0) return undefined;
  return { x, y, width, height };
}

/** A WindowInfo as MCEC writes it, or undefined. */
export function windowOf(v: unknown): Omit<KnownWindow, 'seq'> | undefined {
  if (!isRecord(v) || !Number.isInteger(v.handle)) return undefined;
  const rect = rectOf(v);
  if (!rect) return undefined;
  const text = (k: string) => (typeof v[k] === 'string' ? (v[k] as string) : '');
  return {
    handle: v.handle as number,
    title: text('title'),
    className: text('className'),
    processName: text('processName'),
    rect,
  };
}

export function sameRect(a: Rect, b: Rect): boolean {
  return a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;
}

/** True when a window matches a selector (MCEC's rules: title substring, process without .exe, exact class). */
export function windowMatches(
  sel: WindowSelector,
  w: { handle: number; title: string; className: string; processName: string },
): boolean {
  if (sel.handle !== undefined && sel.handle !== w.handle) return false;
  if (sel.title !== undefined && !w.title.toLowerCase().includes(sel.title.toLowerCase())) return false;
  if (sel.process !== undefined) {
    const p = (name: string) => name.toLowerCase().replace(/\.exe$/, '');
    if (p(sel.process) !== p(w.processName)) return false;
  }
  if (sel.className !== undefined && sel.className !== w.className) return false;
  return true;
}

/** True when an element matches MCEC's `by`/`value` (by defaults to name). */
export function elementMatches(sel: ElementSelector, e: KnownElement): boolean {
  if (sel.by === 'automationid') return e.automationId === sel.value;
  if (sel.by === 'classname') return e.className === sel.value;
  return e.name === sel.value;
}

function identity(e: Pick<KnownElement, 'handle' | 'controlType' | 'automationId' | 'name'>): string {
  return `${e.handle}|${e.controlType}|${e.automationId ?? ''}|${e.name ?? ''}`;
}

/** The text of a send_command line, and whether it types or pastes (MCEC's `chars:` anywhere, one key, ctrl-v). */
function commandInput(args: Record<string, unknown>): 'typed' | 'pasted' | undefined {
  for (const key of ['command', 'line', 'cmd', 'text']) {
    const v = args[key];
    if (typeof v !== 'string') continue;
    const line = v.trim();
    if (/chars:./i.test(line) || line.length === 1) return 'typed';
    if (/(^|\s)ctrl-v(\s|$)/i.test(line)) return 'pasted';
  }
  return undefined;
}

/** What a session's calls have shown of the screen, and where its secrets are. */
export class ScreenKnowledge {
  private readonly windows = new Map<number, KnownWindow>();
  private readonly elements = new Map<number, Map<string, KnownElement>>();
  private readonly secrets = new Map<string, SecretPlace>();
  private focus: { handle?: number; selector?: WindowSelector; element?: KnownElement } | undefined;
  private lastActed: { handle?: number; selector?: WindowSelector } | undefined;
  private readonly typedText: boolean;
  private readonly secretFields: boolean;
  private readonly isSecretKey: (key: string) => boolean;

  constructor(options: KnowledgeOptions = {}) {
    this.typedText = options.typedText ?? true;
    this.secretFields = options.secretFields ?? true;
    this.isSecretKey = secretKeyMatcher(options.secretKeys ?? []);
  }

  /** Every secret place known, oldest first. */
  secretPlaces(): SecretPlace[] {
    return [...this.secrets.values()];
  }

  /** A window's latest known place. */
  window(handle: number): KnownWindow | undefined {
    return this.windows.get(handle);
  }

  /** Every known window, most recently seen first. */
  knownWindows(): KnownWindow[] {
    return [...this.windows.values()].sort((a, b) => b.seq - a.seq);
  }

  /** The elements last seen in a window (any window when `handle` is undefined). */
  elementsOf(handle?: number): KnownElement[] {
    if (handle !== undefined) return [...(this.elements.get(handle)?.values() ?? [])];
    return [...this.elements.values()].flatMap((m) => [...m.values()]);
  }

  /** True when nothing the planner would mask is known. */
  get empty(): boolean {
    return this.secrets.size === 0;
  }

  /** Learn from one completed call (in the order calls completed). Never throws on odd shapes. */
  learn(call: LearnedCall): void {
    const env = call.envelope;
    const result = env?.ok ? env.result : env && !env.ok ? env.error.partialResult : undefined;
    const args = isRecord(call.args) ? call.args : {};
    if (isRecord(result)) this.learnResult(call.seq, call.tool, result);
    if (env?.ok === false && env.error.category === 'invalid-argument') return; // refused: nothing happened
    this.learnAction(call.seq, call.tool, args, isRecord(result) ? result : {});
  }

  private learnResult(seq: number, tool: string, result: Record<string, unknown>): void {
    const window = this.noteWindow(result.window, seq);
    for (const key of ['windows', 'lastObservedWindows']) {
      const list = result[key];
      if (Array.isArray(list)) for (const w of list.slice(0, 512)) this.noteWindow(w, seq);
    }
    if (!window) return;
    if (tool === 'query' && isRecord(result.tree)) {
      this.elements.delete(window.handle); // a fresh tree replaces what was known of the window
      const kids = result.tree.children;
      if (Array.isArray(kids)) for (const c of kids) this.walk(c, window, seq, 0);
    }
    if (isRecord(result.element)) this.walk(result.element, window, seq, 0);
  }

  private noteWindow(v: unknown, seq: number): KnownWindow | undefined {
    const w = windowOf(v);
    if (!w) return undefined;
    const known: KnownWindow = Object.assign(w, { seq }); // a spread would make a hidden class per call
    this.windows.delete(w.handle);
    this.windows.set(w.handle, known);
    if (this.windows.size > MAX_WINDOWS) {
      const oldest = this.windows.keys().next().value!;
      this.windows.delete(oldest);
      this.elements.delete(oldest);
    }
    return known;
  }

  private walk(v: unknown, window: KnownWindow, seq: number, depth: number): void {
    if (!isRecord(v) || depth > 64) return;
    const e = this.noteElement(v, window, seq);
    if (!e) return;
    const kids = v.children;
    if (Array.isArray(kids)) for (const c of kids) this.walk(c, window, seq, depth + 1);
  }

  private noteElement(
    v: Record<string, unknown>,
    window: KnownWindow,
    seq: number,
  ): KnownElement | undefined {
    const rect = rectOf(v);
    if (!rect || typeof v.controlType !== 'string') return undefined;
    const str = (k: string) => (typeof v[k] === 'string' && v[k] !== '' ? (v[k] as string) : undefined);
    const e: KnownElement = {
      controlType: v.controlType,
      rect,
      handle: window.handle,
      windowRect: window.rect,
      seq,
    };
    const name = str('name');
    const automationId = str('automationId');
    const className = str('className');
    if (name !== undefined) e.name = name.slice(0, 200);
    if (automationId !== undefined) e.automationId = automationId.slice(0, 200);
    if (className !== undefined) e.className = className.slice(0, 200);
    if (v.isOffscreen === true || rect.width === 0 || rect.height === 0) return e; // not drawn: not kept
    let list = this.elements.get(window.handle);
    if (!list) {
      list = new Map();
      this.elements.set(window.handle, list);
    }
    const id = identity(e);
    if (list.size < MAX_ELEMENTS_PER_WINDOW || list.has(id)) list.set(id, e);
    // A secret's element seen again: its place is known again (it may have moved with its window).
    const secret = this.secrets.get(id);
    if (secret) secret.element = e;
    if (this.focus?.element && identity(this.focus.element) === id) this.focus.element = e;
    if (this.secretFields && e.controlType === 'Edit' && this.looksSecret(e) && !secret)
      this.addSecret(id, { kind: 'field', element: e, handle: e.handle, seq });
    return e;
  }

  private looksSecret(e: KnownElement): boolean {
    return (
      (e.name !== undefined && this.isSecretKey(e.name)) ||
      (e.automationId !== undefined && this.isSecretKey(e.automationId))
    );
  }

  private addSecret(key: string, place: SecretPlace): void {
    const had = this.secrets.get(key);
    // Typed text outranks a field's look; the newest call is remembered.
    if (had && had.kind !== 'field' && place.kind === 'field') return;
    this.secrets.delete(key);
    this.secrets.set(key, place);
    if (this.secrets.size > MAX_SECRETS) {
      // Forget the oldest secret field first; typed secrets are kept as long as possible.
      const field = [...this.secrets].find(([, p]) => p.kind === 'field');
      this.secrets.delete(field ? field[0] : this.secrets.keys().next().value!);
    }
  }

  /** The window a call's target names: a known handle when one matches, else the selector itself. */
  private targetOf(
    args: Record<string, unknown>,
  ): { handle?: number; selector?: WindowSelector } | undefined {
    if (Number.isInteger(args.handle) && (args.handle as number) > 0)
      return { handle: args.handle as number };
    const sel: WindowSelector = {};
    if (typeof args.window === 'string' && args.window !== '') sel.title = args.window;
    if (typeof args.process === 'string' && args.process !== '') sel.process = args.process;
    if (typeof args.className === 'string' && args.className !== '') sel.className = args.className;
    if (Object.keys(sel).length === 0)
      return args.foreground === true ? (this.lastActed ?? undefined) : undefined;
    const match = this.knownWindows().find((w) => windowMatches(sel, w));
    return match ? { handle: match.handle } : { selector: sel };
  }

  private elementBySelector(handle: number | undefined, sel: ElementSelector): KnownElement | undefined {
    if (handle === undefined) return undefined;
    const found = this.elementsOf(handle).filter((e) => elementMatches(sel, e));
    return found.length === 1 ? found[0] : undefined; // ambiguous: the element is not known
  }

  /** The smallest known element of a window (or of the newest window there) under a screen point. */
  private elementAt(
    handle: number | undefined,
    x: number,
    y: number,
  ): { handle?: number; element?: KnownElement } {
    const inside = (r: Rect) => x >= r.x && y >= r.y && x < r.x + r.width && y < r.y + r.height;
    const h = handle ?? this.knownWindows().find((w) => inside(w.rect))?.handle;
    const hits = this.elementsOf(h).filter((e) => inside(e.rect));
    hits.sort((a, b) => a.rect.width * a.rect.height - b.rect.width * b.rect.height);
    return { handle: h, element: hits[0] };
  }

  private learnAction(
    seq: number,
    tool: string,
    args: Record<string, unknown>,
    result: Record<string, unknown>,
  ) {
    const resultWindow = windowOf(result.window);
    const target = resultWindow ? { handle: resultWindow.handle } : this.targetOf(args);
    const selectorOf = (v: unknown): ElementSelector | undefined => {
      if (!isRecord(v) || typeof v.value !== 'string' || v.value === '') return undefined;
      const by = typeof v.by === 'string' ? v.by.toLowerCase() : 'name';
      return { by: by === 'automationid' || by === 'classname' ? by : 'name', value: v.value };
    };
    switch (tool) {
      case 'focus': {
        const el = isRecord(result.element) ? this.lookup(target?.handle, result.element) : undefined;
        this.focus = { ...target, element: el && TEXT_BOXES.has(el.controlType) ? el : undefined };
        this.lastActed = target;
        return;
      }
      case 'click': {
        const sel = selectorOf(args.at);
        let place: { handle?: number; element?: KnownElement } = { handle: target?.handle };
        if (sel) place.element = this.elementBySelector(target?.handle, sel);
        else if (
          Array.isArray(result.at) &&
          num(result.at[0]) !== undefined &&
          num(result.at[1]) !== undefined
        )
          place = this.elementAt(target?.handle, result.at[0] as number, result.at[1] as number);
        const element =
          place.element && TEXT_BOXES.has(place.element.controlType) ? place.element : undefined;
        this.focus = { handle: place.handle, selector: target?.selector, element };
        this.lastActed = this.focus;
        return;
      }
      case 'invoke': {
        const action = typeof args.action === 'string' ? args.action.toLowerCase() : 'invoke';
        const sel = selectorOf(args);
        const element = sel ? this.elementBySelector(target?.handle, sel) : undefined;
        this.lastActed = target;
        if (action === 'setfocus') this.focus = { ...target, element };
        if (action === 'setvalue' && typeof args.text === 'string' && args.text !== '' && this.typedText)
          this.secretAt('typed', { ...target, element }, seq);
        return;
      }
      case 'send_command': {
        const input = commandInput(args);
        if (input && this.typedText) this.secretAt(input, this.focus ?? this.lastActed, seq);
        return;
      }
      default:
        if (target && (tool === 'window' || tool === 'drag' || tool === 'launch')) this.lastActed = target;
    }
  }

  /** A result's element as known (noted by learnResult just before). */
  private lookup(handle: number | undefined, v: Record<string, unknown>): KnownElement | undefined {
    if (handle === undefined || typeof v.controlType !== 'string') return undefined;
    const key = identity({
      handle,
      controlType: v.controlType,
      automationId: typeof v.automationId === 'string' && v.automationId !== '' ? v.automationId : undefined,
      name: typeof v.name === 'string' && v.name !== '' ? v.name : undefined,
    });
    return this.elements.get(handle)?.get(key);
  }

  private secretAt(
    kind: 'typed' | 'pasted',
    place: { handle?: number; selector?: WindowSelector; element?: KnownElement } | undefined,
    seq: number,
  ): void {
    if (place?.element) {
      this.addSecret(identity(place.element), {
        kind,
        element: place.element,
        handle: place.element.handle,
        seq,
      });
    } else if (place?.handle !== undefined) {
      this.addSecret(`window:${place.handle}`, { kind, handle: place.handle, seq });
    } else if (place?.selector) {
      this.addSecret(`selector:${JSON.stringify(place.selector)}`, { kind, selector: place.selector, seq });
    } else {
      this.addSecret('unplaced', { kind, unplaced: true, seq });
    }
  }
}
