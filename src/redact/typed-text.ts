/**
 * Which tool arguments are text the agent types into windows or puts on the clipboard (mcec-wire §1-2).
 * Such text is user content (form input, messages, sometimes passwords typed into a login box), so the log
 * keeps only its length unless the user opts in. The choice, by tool (names compared lower case without
 * `-`/`_`):
 * - an MCEC tool: the `typedText` of its row in the tool catalog (`src/contract/tool-catalog.ts`), so
 *   clipboard `text`, `value`, `content`, `data` (the text set) and get's answer `text` (both remembered as
 *   secrets: clipboard text is pasted and read back); invoke `text` only (its `value` is always the element
 *   selector, which the log must keep to be useful); the other actions `text` and `keys`; observation,
 *   read-only and lifecycle tools nothing;
 * - send_command (and `command` of other servers): the command line (`command`, `line`, `cmd`, `text`) when it types text: MCEC's raw
 *   `chars:<text>` (found anywhere in the line, any case, as MCEC's unanchored `(\w+:)(.+)` parse finds it;
 *   everything after the first `chars:` becomes its length), a single character (MCEC presses that key:
 *   one typed char), or a line whose first word is a typing verb of other servers (type, typetext,
 *   sendkeys, keys, sendtext, settext, setvalue, paste, setclipboard, `clipboard set`): the verb stays,
 *   the rest becomes its length;
 * - a tool MCEC does not have (a misspelled name, another server's tool): every argument whose key, lower
 *   case without `-`/`_`, is one of `TYPED_INPUT_KEYS` (text, chars, keys, input...), and when the tool's
 *   name says it types (`TYPING_TOOL_NAME`: type, keys, keystroke, fill, input, paste, send, setvalue, settext, setfield, chars, clipboard) one
 *   of `TYPED_DATA_KEYS` (value, newvalue, content, string, data): a typed password sent to `type_txt` or
 *   `chars` never reaches the log, while `write_file {content}` is kept (secret keys such as `password`
 *   are `[redacted]` for every tool anyway).
 * Only string values at the top level of the arguments are replaced (selectors and nested objects are not
 * typed text), except for a tool MCEC does not have whose name says it types: there typed-input keys count
 * at any depth (`browser_fill_form {fields: [{name, value}]}`, `send-input {input: {text}}`). Key-chord arrays (`["ctrl", "c"]`) are kept: they are shortcuts, not content.
 */

import { MCEC_TOOL_CATALOG, MCEC_TOOL_NAMES, type TypedTextSpec } from '../contract/tool-catalog.js';
import { normalizeKey } from './secret-keys.js';

/** What stands in the log for typed text. */
export function typedTextMarker(text: string): string {
  return `[typed text: ${text.length} chars]`;
}

/** Each MCEC tool's typed-text spec (none: it types nothing), by its name compared lower case without `-`/`_`. */
const TYPED_TEXT_BY_NAME: ReadonlyMap<string, TypedTextSpec | undefined> = new Map(
  MCEC_TOOL_NAMES.map((name) => [
    normalizeKey(name),
    (MCEC_TOOL_CATALOG[name] as { typedText?: TypedTextSpec }).typedText,
  ]),
);
/** The command-line spec of other servers' `command` tool (as MCEC's send_command). */
const COMMAND_SPEC: TypedTextSpec = { keys: ['command', 'line', 'cmd', 'text'], rule: 'command-line' };
/**
 * The argument keys (lower case without `-`/`_`) of a tool MCEC does not have that always hold typed input:
 * what typing tools of MCEC and other servers name the text they type. Exact keys, not words: `inputSchema`
 * or `keyCode` are not typed input.
 */
export const TYPED_INPUT_KEYS: ReadonlySet<string> = new Set([
  'text',
  'chars',
  'characters',
  'keys',
  'keystrokes',
  'input',
  'inputtext',
  'typedtext',
  'texttotype',
]);
/**
 * Keys that name data of any kind (a file's content, a setting's value): typed input only when the tool's
 * name says it types (`TYPING_TOOL_NAME`), so `write_file {content}` and `search {string}` stay as sent.
 */
export const TYPED_DATA_KEYS: ReadonlySet<string> = new Set([
  'value',
  'newvalue',
  'content',
  'string',
  'data',
]);
/** A tool name (lower case without `-`/`_`) that says the tool types, fills, sets, pastes or sends text. */
// Not `set` or `key` alone: they are in reset, settings, asset, offset, hotkey, keyboard, whose values are data.
const TYPING_TOOL_NAME =
  /type|keys|keystroke|fill|input|paste|send|setvalue|settext|setfield|chars|clipboard/;

const TYPING_VERBS = new Set([
  'type',
  'typetext',
  'sendkeys',
  'keys',
  'sendtext',
  'settext',
  'setvalue',
  'paste',
  'setclipboard',
]);

/**
 * The typed-text spec of a tool by name: its catalog row's (undefined: it types nothing), the `command`
 * spec, or null for a tool MCEC does not have (its typed input is found by key, `argsSpec`).
 */
function typedTextSpec(tool: string): TypedTextSpec | undefined | null {
  const name = normalizeKey(tool);
  if (TYPED_TEXT_BY_NAME.has(name)) return TYPED_TEXT_BY_NAME.get(name);
  return name === 'command' ? COMMAND_SPEC : null;
}

/** The typed-text spec of one call: its tool's, or for a tool MCEC does not have, its typed-input keys. */
function argsSpec(tool: string, args: Record<string, unknown>): TypedTextSpec | undefined {
  const spec = typedTextSpec(tool);
  if (spec !== null) return spec;
  const typing = TYPING_TOOL_NAME.test(normalizeKey(tool));
  const keys = Object.keys(args).filter((k) => {
    const key = normalizeKey(k);
    return TYPED_INPUT_KEYS.has(key) || (typing && TYPED_DATA_KEYS.has(key));
  });
  return keys.length > 0 ? { keys } : undefined;
}

/** How deep typed input is looked for in a typing tool's arguments (a form's fields, an input object). */
const MAX_NESTED_DEPTH = 32;

/** Whether typed input is looked for at any depth of this tool's arguments: a tool MCEC does not have that types. */
function typesNested(tool: string): boolean {
  return typedTextSpec(tool) === null && TYPING_TOOL_NAME.test(normalizeKey(tool));
}

function isPlainRecord(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * The arguments of a tool MCEC does not have whose name says it types, with typed input below the top level
 * (`fields: [{name, value}]`, `input: {text}`) replaced by its length, and those texts; `args` itself when
 * the tool is another or nothing nested is typed. `args` is never changed.
 */
export function hideNestedTypedText(
  tool: string,
  args: Record<string, unknown>,
): { args: Record<string, unknown>; texts: string[] } {
  const texts: string[] = [];
  if (!typesNested(tool)) return { args, texts };
  let copy: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(args)) {
    if (typeof v !== 'object' || v === null) continue;
    const hidden = hideNested(v, texts, 1);
    if (hidden === v) continue;
    copy ??= { ...args };
    copy[k] = hidden;
  }
  return { args: copy ?? args, texts };
}

function hideNested(v: unknown, texts: string[], depth: number): unknown {
  if (depth > MAX_NESTED_DEPTH) return v;
  if (Array.isArray(v)) {
    let out: unknown[] | undefined;
    v.forEach((x, i) => {
      const h = hideNested(x, texts, depth + 1);
      if (h === x) return;
      out ??= [...v];
      out[i] = h;
    });
    return out ?? v;
  }
  if (!isPlainRecord(v)) return v;
  let out: Record<string, unknown> | undefined;
  for (const [k, x] of Object.entries(v)) {
    const key = normalizeKey(k);
    let h: unknown = x;
    if (typeof x === 'string') {
      if (TYPED_INPUT_KEYS.has(key) || TYPED_DATA_KEYS.has(key)) {
        texts.push(x);
        h = typedTextMarker(x);
      }
    } else {
      h = hideNested(x, texts, depth + 1);
    }
    if (h === x) continue;
    out ??= { ...v };
    out[k] = h;
  }
  return out ?? v;
}

/** Where the text typed by the first `chars:` (any case) at or after `from` starts, or -1. */
function charsArgsAt(line: string, from = 0): number {
  // Every `:` is checked for a `chars` before it: no lower-cased copy of a possibly huge string.
  for (let at = line.indexOf(':', from + 5); at !== -1; at = line.indexOf(':', at + 1)) {
    if (at - 5 < from) continue;
    if (
      (line.charCodeAt(at - 5) | 32) === 99 && // c
      (line.charCodeAt(at - 4) | 32) === 104 && // h
      (line.charCodeAt(at - 3) | 32) === 97 && // a
      (line.charCodeAt(at - 2) | 32) === 114 && // r
      (line.charCodeAt(at - 1) | 32) === 115 // s
    )
      return at + 1;
  }
  return -1;
}

/** A command line with the typed part replaced by its length, or undefined when it types nothing. */
export function redactCommandLine(line: string): string | undefined {
  const typed = typedPart(line);
  return typed === undefined ? undefined : `${line.slice(0, typed)}${typedTextMarker(line.slice(typed))}`;
}

/** Where the typed text of a command line starts, or undefined when the line types nothing. */
function typedPart(line: string): number | undefined {
  const chars = charsArgsAt(line);
  if (chars !== -1) return chars < line.length ? chars : undefined;
  // MCEC presses the key of a one-character command: a character typed.
  if (line.trim().length === 1) return line.indexOf(line.trim());
  const m = /^(\s*)(\S+)(\s+)/.exec(line.slice(0, 200));
  if (!m) return undefined;
  const verb = normalizeKey(m[2]!);
  let head = m[0];
  if (verb === 'clipboard') {
    const sub = /^(set)(\s+)/i.exec(line.slice(head.length, head.length + 20));
    if (!sub) return undefined;
    head += sub[0];
  } else if (!TYPING_VERBS.has(verb)) {
    return undefined;
  }
  return head.length;
}

/** Typed text shorter than this is not searched for in the call's output (it would hit ordinary words). */
export const MIN_ECHOED_TYPED_TEXT = 4;

/**
 * What a call's output may echo of its typed text, each with what replaces it: the whole command line (its
 * redacted form) and the typed text alone (its length) when at least 4 chars. Empty when nothing is typed.
 */
export function typedTextEchoes(tool: string, args: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const command = typedTextSpec(tool)?.rule === 'command-line';
  for (const [key, replacement] of typedTextReplacements(tool, args)) {
    const original = args[key];
    if (typeof original !== 'string') continue;
    const at = command ? typedPart(original) : 0;
    if (at === undefined) continue;
    const typed = original.slice(at);
    // MCEC quotes the line in its errors (`Unknown command: 'chars:pw'`): found whatever its length.
    if (command) out.push([`'${original}'`, `'${replacement}'`]);
    if (command && original.trim() !== typed && original.trim().length >= MIN_ECHOED_TYPED_TEXT)
      out.push([original.trim(), replacement.trim()]);
    if (typed.length >= MIN_ECHOED_TYPED_TEXT) out.push([typed, typedTextMarker(typed)]);
  }
  for (const text of hideNestedTypedText(tool, args).texts)
    if (text.length >= MIN_ECHOED_TYPED_TEXT) out.push([text, typedTextMarker(text)]);
  return out;
}

/**
 * The typed-text keys of one call's top-level arguments, with their replacement; empty when none. `args`
 * is read, never changed.
 */
export function typedTextReplacements(tool: string, args: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  const spec = argsSpec(tool, args);
  if (!spec) return out;
  if (spec.rule === 'command-line') {
    for (const k of spec.keys) {
      const v = args[k];
      if (typeof v !== 'string') continue;
      const redacted = redactCommandLine(v);
      if (redacted !== undefined) out.set(k, redacted);
    }
    return out;
  }
  for (const k of spec.keys) {
    const v = args[k];
    if (typeof v === 'string' && Object.hasOwn(args, k)) out.set(k, typedTextMarker(v));
  }
  return out;
}

/** The typed text of a call that is also remembered as a secret (clipboard text): the original values. */
export function rememberedTypedText(tool: string, args: Record<string, unknown>): string[] {
  if (typedTextSpec(tool)?.remember !== true) return [];
  const out: string[] = [];
  for (const key of typedTextReplacements(tool, args).keys()) {
    const v = args[key];
    if (typeof v === 'string') out.push(v);
  }
  return out;
}

/** Envelope text of a text block worth parsing for an answer's user text (a clipboard holds little). */
const MAX_ANSWER_BLOCK = 4 * 1024 * 1024;

/**
 * A call's answer with the user text its result carries (clipboard get's `text`) replaced by its length,
 * and those texts. Reads an envelope (`{result: {text}}`); in a CallToolResult or a JSON-RPC response, the
 * envelope text blocks are only read (the texts are then scrubbed wherever they stand). `value` is never
 * changed; unchanged when the tool's answers hold no user text.
 */
export function hideAnswerText(tool: string, value: unknown): { value: unknown; texts: string[] } {
  const keys = typedTextSpec(tool)?.answerKeys;
  const texts: string[] = [];
  if (!keys) return { value, texts };
  const hidden = hideInEnvelope(value, keys, texts);
  collectFromBlocks(value, keys, texts, 0);
  return { value: hidden, texts };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An envelope's copy with `result[key]` strings replaced by their length (and noted), else `value` itself. */
function hideInEnvelope(value: unknown, keys: readonly string[], texts: string[]): unknown {
  if (!isObject(value) || !isObject(value.result) || typeof value.ok !== 'boolean') return value;
  let result: Record<string, unknown> | undefined;
  for (const key of keys) {
    const text = value.result[key];
    if (typeof text !== 'string' || !Object.hasOwn(value.result, key)) continue;
    texts.push(text);
    result ??= { ...value.result };
    result[key] = typedTextMarker(text);
  }
  return result ? { ...value, result } : value;
}

/** The answer texts inside a CallToolResult's (or a JSON-RPC response's) envelope text blocks. */
function collectFromBlocks(value: unknown, keys: readonly string[], texts: string[], depth: number): void {
  if (!isObject(value) || depth > 2) return;
  if (isObject(value.result) && !('ok' in value)) collectFromBlocks(value.result, keys, texts, depth + 1);
  if (!Array.isArray(value.content)) return;
  for (const block of value.content) {
    if (!isObject(block) || typeof block.text !== 'string' || block.text.length > MAX_ANSWER_BLOCK) continue;
    try {
      hideInEnvelope(JSON.parse(block.text), keys, texts);
    } catch {
      // not an envelope
    }
  }
}

/** Just after the quote (`'`, `"`, `` ` ``, `\u0022`) that opens the text holding the command at `open`, or -1. */
function openingQuote(text: string, open: number): number {
  for (let i = open - 1; i >= 0 && open - i <= 256; i--) {
    const c = text.charCodeAt(i);
    if (c === 10 || c === 13) return -1;
    if (c === 39 || c === 34 || c === 96) return i + 1;
    if (c === 50 && i >= 5 && text.startsWith('\\u0022', i - 5)) return i + 1;
  }
  return -1;
}

/**
 * Where the `chars:` text starting at `from` ends. `open` is where the command word starts; the nearest
 * quote before it on its line (at most 256 chars back) decides: a JSON quote ends at the quote with the same
 * backslashes (`\u0022` likewise), `'` at the line's last `'`, a backtick at the next one. Without a quote:
 * the first quote of any level, or the line's end.
 */
function typedEnd(text: string, from: number, open: number): number {
  let lineEnd = from;
  while (lineEnd < text.length && text.charCodeAt(lineEnd) !== 10 && text.charCodeAt(lineEnd) !== 13)
    lineEnd++;
  const o = openingQuote(text, open);
  const before = o > 0 ? text.charCodeAt(o - 1) : 0;
  if (before === 39) {
    const last = text.lastIndexOf("'", lineEnd - 1);
    return last >= from ? last : lineEnd;
  }
  if (before === 96) {
    const next = text.indexOf('`', from);
    return next !== -1 && next < lineEnd ? next : lineEnd;
  }
  if (before === 34 || before === 50) {
    const quote = before === 50 ? 'u0022' : '"';
    const q = o - quote.length;
    let slashes = 0;
    while (q - 1 - slashes >= 0 && text.charCodeAt(q - 1 - slashes) === 92) slashes++;
    for (let at = text.indexOf(quote, from); at !== -1 && at < lineEnd; at = text.indexOf(quote, at + 1)) {
      let k = at;
      while (k > from && text.charCodeAt(k - 1) === 92) k--;
      if (at - k === slashes) return k;
    }
    return lineEnd;
  }
  return firstQuote(text, from, lineEnd);
}

/** The first `"`, `` ` ``, `\"` or `\u0022` at or after `from`, or `end`. */
function firstQuote(text: string, from: number, end: number): number {
  for (let i = from; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 || c === 96) return i;
    if (c === 92) {
      let j = i;
      while (j < end && text.charCodeAt(j) === 92) j++;
      if (text.charCodeAt(j) === 34 || text.startsWith('u0022', j)) return i;
      i = j - 1;
    }
  }
  return end;
}

/**
 * `text` with the text of every `chars:` command in it (any case) replaced by its length: for command
 * lines met outside a call's own arguments (a malformed request's excerpt, an echo in another call's
 * output). The typed text ends at a closing JSON quote, at the last `'` when the command was quoted with
 * `'` (MCEC's `Unknown command: 'chars:...'`), or at the end of the line.
 */
export function scrubTypedCommands(text: string): string {
  if (text.length < 7 || text.indexOf(':') === -1) return text;
  let out = '';
  let last = 0;
  let from = 0;
  for (;;) {
    const start = charsArgsAt(text, from);
    if (start === -1 || start >= text.length) break;
    if (text.startsWith('[typed text: ', start)) {
      from = start;
      continue;
    }
    let k = start - 6;
    while (k > 0 && /\w/.test(text[k - 1]!)) k--;
    const end = typedEnd(text, start, k);
    if (end > start) {
      out += text.slice(last, start) + typedTextMarker(unescapedLength(text.slice(start, end)));
      last = end;
    }
    from = Math.max(end, start);
  }
  return last === 0 ? text : out + text.slice(last);
}

/** The typed text as typed: JSON escapes count as the one char they stand for. */
function unescapedLength(s: string): string {
  if (!s.includes('\\')) return s;
  try {
    return JSON.parse(`"${s}"`) as string;
  } catch {
    return s;
  }
}
