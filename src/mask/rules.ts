/** The user's mask rules: read from JSON (a rules file, `createRecorder({ mask: { rules } })`) or `--mask` text. */
import { isRecord } from '../util/json.js';
import type { ElementSelector, MaskRule, Rect, WindowSelector } from './types.js';

/** A rule that cannot be used: the message says which and why. */
export class MaskRuleError extends Error {
  override name = 'MaskRuleError';
}

const BY = new Set(['name', 'automationid', 'classname']);

function nonEmpty(v: unknown, where: string): string {
  if (typeof v !== 'string' || v.trim() === '')
    throw new MaskRuleError(`${where} must be a non-empty string`);
  return v;
}

function windowSelector(v: unknown, where: string): WindowSelector {
  if (!isRecord(v))
    throw new MaskRuleError(`${where} must be an object {title?, process?, className?, handle?}`);
  const out: WindowSelector = {};
  for (const key of Object.keys(v)) {
    if (!['title', 'process', 'className', 'handle'].includes(key))
      throw new MaskRuleError(`${where}.${key} is not a window selector (title, process, className, handle)`);
  }
  if (v.title !== undefined) out.title = nonEmpty(v.title, `${where}.title`);
  if (v.process !== undefined) out.process = nonEmpty(v.process, `${where}.process`);
  if (v.className !== undefined) out.className = nonEmpty(v.className, `${where}.className`);
  if (v.handle !== undefined) {
    if (!Number.isInteger(v.handle) || (v.handle as number) <= 0)
      throw new MaskRuleError(`${where}.handle must be a positive integer`);
    out.handle = v.handle as number;
  }
  if (Object.keys(out).length === 0) throw new MaskRuleError(`${where} names no window`);
  return out;
}

function elementSelector(v: unknown, where: string): ElementSelector {
  if (!isRecord(v)) throw new MaskRuleError(`${where} must be an object {by?, value}`);
  const value = nonEmpty(v.value, `${where}.value`);
  if (v.by === undefined) return { value };
  const by = typeof v.by === 'string' ? v.by.toLowerCase() : '';
  if (!BY.has(by)) throw new MaskRuleError(`${where}.by must be name, automationid or classname`);
  return { by: by as ElementSelector['by'], value };
}

function rectOf(v: unknown, where: string): Rect {
  if (!isRecord(v)) throw new MaskRuleError(`${where} must be an object {x, y, width, height}`);
  const n = (key: string, min: number) => {
    const x = v[key];
    if (!Number.isInteger(x) || (x as number) < min)
      throw new MaskRuleError(`${where}.${key} must be an integer >= ${min}`);
    return x as number;
  };
  return { x: n('x', 0), y: n('y', 0), width: n('width', 1), height: n('height', 1) };
}

/** One rule from JSON; `where` names it in errors. */
export function parseMaskRule(v: unknown, where = 'rule'): MaskRule {
  if (!isRecord(v)) throw new MaskRuleError(`${where} must be an object`);
  for (const key of Object.keys(v)) {
    if (!['window', 'element', 'rect', 'label'].includes(key))
      throw new MaskRuleError(`${where}.${key} is not a rule field (window, element, rect, label)`);
  }
  const rule: MaskRule = {};
  if (v.window !== undefined) rule.window = windowSelector(v.window, `${where}.window`);
  if (v.element !== undefined) rule.element = elementSelector(v.element, `${where}.element`);
  if (v.rect !== undefined) rule.rect = rectOf(v.rect, `${where}.rect`);
  if (v.label !== undefined) rule.label = nonEmpty(v.label, `${where}.label`).slice(0, 80);
  if (!rule.window && !rule.element) throw new MaskRuleError(`${where} needs a window or an element`);
  if (rule.rect && !rule.window)
    throw new MaskRuleError(`${where}.rect needs a window (it is relative to it)`);
  if (rule.rect && rule.element) throw new MaskRuleError(`${where} has both rect and element: use one`);
  return rule;
}

/** A rules document (`schema/mask-rules.schema.json`): `{rules: [...]}` or a bare array of rules. */
export function parseMaskRules(doc: unknown): MaskRule[] {
  const list = Array.isArray(doc) ? doc : isRecord(doc) ? doc.rules : undefined;
  if (!Array.isArray(list))
    throw new MaskRuleError('mask rules must be {"rules": [...]} or an array of rules');
  if (isRecord(doc))
    for (const key of Object.keys(doc))
      if (key !== 'rules' && key !== '$schema') throw new MaskRuleError(`${key} is not a rules-file field`);
  return list.map((r, i) => parseMaskRule(r, `rules[${i}]`));
}

/** Parse the text of a rules file (JSON). */
export function parseMaskRulesText(text: string, source = 'mask rules'): MaskRule[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new MaskRuleError(`${source}: not JSON (${(e as Error).message})`);
  }
  try {
    return parseMaskRules(doc);
  } catch (e) {
    throw new MaskRuleError(`${source}: ${(e as Error).message}`);
  }
}

/**
 * One `--mask` argument: `key=value` pairs separated by `;`. Keys: `window` (title substring), `process`,
 * `class`, `handle`, `by`, `value` (an element), `rect=x,y,width,height` (window-relative), `label`.
 * `--mask 'window=Sign in'`, `--mask 'window=Sign in;by=automationid;value=PasswordBox'`,
 * `--mask 'process=keepass;rect=0,40,300,24'`.
 */
export function parseMaskArg(text: string): MaskRule {
  const raw: Record<string, string> = {};
  for (const part of text.split(';')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new MaskRuleError(`--mask '${text}': '${part}' is not key=value`);
    const key = part.slice(0, eq).trim().toLowerCase();
    if (key in raw) throw new MaskRuleError(`--mask '${text}': ${key} given twice`);
    raw[key] = part.slice(eq + 1);
  }
  const window: Record<string, unknown> = {};
  const rule: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'window' || key === 'title') window.title = value;
    else if (key === 'process') window.process = value;
    else if (key === 'class' || key === 'classname') window.className = value;
    else if (key === 'handle') window.handle = /^\d+$/.test(value) ? Number(value) : value;
    else if (key === 'label') rule.label = value;
    else if (key === 'by' || key === 'value') {
      rule.element = { ...(rule.element as object), [key]: value };
    } else if (key === 'rect') {
      const n = value.split(',').map((p) => (/^\s*\d+\s*$/.test(p) ? Number(p) : Number.NaN));
      if (n.length !== 4 || n.some(Number.isNaN))
        throw new MaskRuleError(`--mask '${text}': rect must be x,y,width,height (integers)`);
      rule.rect = { x: n[0], y: n[1], width: n[2], height: n[3] };
    } else
      throw new MaskRuleError(
        `--mask '${text}': unknown key ${key} (window, process, class, handle, by, value, rect, label)`,
      );
  }
  if (Object.keys(window).length > 0) rule.window = window;
  try {
    return parseMaskRule(rule, `--mask '${text}'`);
  } catch (e) {
    throw new MaskRuleError((e as Error).message);
  }
}

/** A rule in words, for the summary's `rule` field: its label, else `#<index>`. */
export function ruleName(rule: MaskRule, index: number): string {
  return `user:${rule.label ?? `#${index + 1}`}`;
}
