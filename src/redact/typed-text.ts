/**
 * Which tool arguments are text the agent types into windows or puts on the clipboard (mcec-wire §1-2).
 * Such text is user content (form input, messages, sometimes passwords typed into a login box), so the log
 * keeps only its length unless the user opts in. The choice, by tool (names compared lower case without
 * `-`/`_`):
 * - clipboard: `text`, `value`, `content`, `data` (the text set; a read has none of them);
 * - invoke: `text` and `keys`; `value` only when `action` is a typing action (value, setvalue, settext, type,
 *   typetext, sendkeys, keys, input, fill, append) and no `by` is given: with `by`, `value` is the element
 *   selector (MCEC's `{by, value}`), which the log must keep to be useful;
 * - send_command: the command line (`command`, `line`, `cmd`, `text`) when its verb types text (type,
 *   typetext, sendkeys, keys, sendtext, settext, setvalue, paste, setclipboard, `clipboard set`): the verb
 *   stays, the rest becomes its length;
 * - every other actuation tool (window, drag, click, focus, launch, record, and any tool whose name says it
 *   types: type, key, text, input, fill, write, paste; observation tools excluded): `text` and `keys`.
 * Only string values at the top level of the arguments are replaced; selectors and nested objects are not
 * typed text. Key-chord arrays (`["ctrl", "c"]`) are kept: they are shortcuts, not content.
 */

import { normalizeKey } from './secret-keys.js';

/** What stands in the log for typed text. */
export function typedTextMarker(text: string): string {
  return `[typed text: ${text.length} chars]`;
}

const OBSERVATION = new Set(['query', 'capture', 'gettext', 'find', 'waitfor', 'windows', 'displays']);
const ACTUATION = new Set(['window', 'invoke', 'drag', 'click', 'focus', 'clipboard', 'launch', 'record']);
const TYPING_NAME = /type|key|text|input|fill|write|paste/;
const TYPING_ACTIONS = new Set([
  'value',
  'setvalue',
  'settext',
  'type',
  'typetext',
  'sendkeys',
  'keys',
  'input',
  'fill',
  'append',
]);
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
const COMMAND_KEYS = ['command', 'line', 'cmd', 'text'];

/** A command line with the typed part replaced by its length, or undefined when it types nothing. */
export function redactCommandLine(line: string): string | undefined {
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
  return `${head}${typedTextMarker(line.slice(head.length))}`;
}

/**
 * The typed-text keys of one call's top-level arguments, with their replacement; empty when none. `args`
 * is read, never changed.
 */
export function typedTextReplacements(tool: string, args: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  const name = normalizeKey(tool);
  if (name === 'sendcommand' || name === 'command') {
    for (const k of COMMAND_KEYS) {
      const v = args[k];
      if (typeof v !== 'string') continue;
      const redacted = redactCommandLine(v);
      if (redacted !== undefined) out.set(k, redacted);
    }
    return out;
  }
  if (OBSERVATION.has(name)) return out;
  const keys: string[] = [];
  if (name === 'clipboard') keys.push('text', 'value', 'content', 'data');
  else if (name === 'invoke') {
    keys.push('text', 'keys');
    const action = args.action;
    if (args.by === undefined && typeof action === 'string' && TYPING_ACTIONS.has(normalizeKey(action)))
      keys.push('value');
  } else if (ACTUATION.has(name) || TYPING_NAME.test(name)) keys.push('text', 'keys');
  for (const k of keys) {
    const v = args[k];
    if (typeof v === 'string' && Object.hasOwn(args, k)) out.set(k, typedTextMarker(v));
  }
  return out;
}
