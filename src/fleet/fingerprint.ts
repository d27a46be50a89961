/**
 * Failure fingerprints: what makes two failures "the same failure" across runs and machines. The built-in
 * rules are versioned (FINGERPRINT_RULES_VERSION): tool + code + category + the error detail with its
 * volatile parts removed (numbers, handles, ids, paths, times) + the target window's class and process.
 * User rules (a JSON file, schema/fingerprint-rules.schema.json) match on fields and either set the
 * fingerprint or extend the built-in one. No I/O; user regexes run on a thread with a deadline (rule-regex.ts).
 */
import { createHash } from 'node:crypto';
import { serverCategory } from '../contract/read-tool-output.js';
import { FINGERPRINT_RULES_VERSION } from './fingerprint-version.js';
import { RegexThread, RegexTimeoutError } from './rule-regex.js';

export { FINGERPRINT_RULES_VERSION };

/** The most user rules a rules file may hold. */
export const MAX_RULES = 1000;

/** Longest detail looked at (details are clipped before they reach a regex). */
const MAX_DETAIL = 500;

/** What a fingerprint is made of: one failed or faulted call. */
export interface FingerprintInput {
  tool: string;
  code: string | null;
  category: string | null;
  detail: string | null;
  /** The target window's class and process (from the call's arguments or what the log says about it). */
  className: string | null;
  process: string | null;
  /** The target window's title, when known (used only by rules that extend with it). */
  window: string | null;
  /** The call's target as the verdict names it (`window=save as`, `handle=131234`, ''). */
  target: string;
  status: string;
  scenario?: string | null;
  host?: string | null;
}

/** The fields a user rule may match or extend with. */
export const RULE_FIELDS = [
  'tool',
  'code',
  'category',
  'detail',
  'className',
  'process',
  'window',
  'target',
  'status',
  'scenario',
  'host',
] as const;
export type RuleField = (typeof RULE_FIELDS)[number];

/**
 * A user rule: every field in `match` must match (a string equals, case-insensitively; `{"contains": s}`
 * is a substring; `{"regex": s}` a regular expression, tested on at most 500 characters). Then `set` names
 * the fingerprint outright (all matching failures are one group), or `extend` adds fields to the built-in key.
 */
export interface FingerprintRule {
  name?: string;
  match: Partial<Record<RuleField, string | { contains: string } | { regex: string }>>;
  set?: string;
  extend?: RuleField[];
}

/** A fingerprint: a short stable id and the readable key it hashes. */
export interface Fingerprint {
  /** `fp1-<12 hex>` for the built-in rules (the digit is the rules version), or a rule's `set` name. */
  id: string;
  /** The key in words: `capture frame-all-black capture-blank "..." class=ApplicationFrameWindow process=video.ui`. */
  key: string;
  /** The user rule that decided it, or null for the built-in rules. */
  rule: string | null;
}

const VOLATILE: Array<[RegExp, string]> = [
  // ISO times and dates, then clock times: before numbers, which they contain.
  [/\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?/g, '<time>'],
  [/\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b/g, '<time>'],
  // Paths: Windows drive or UNC paths, then POSIX paths of two segments or more.
  [/(?:[A-Za-z]:|\\\\[^\s\\'"]+)\\[^\s'"`)]*/g, '<path>'],
  [/(?:^|(?<=[\s'"`(=]))(?:\.{0,2}\/[^\s/'"`)]+){2,}\/?/g, '<path>'],
  // GUIDs, hex handles, long hex or mixed ids, then any number.
  [/\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g, '<id>'],
  [/\b0x[0-9a-fA-F]+\b/g, '<n>'],
  [/\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b/g, '<id>'],
  [/\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{16,}\b/g, '<id>'],
  [/-?\d+(?:\.\d+)?/g, '<n>'],
];

/** The error detail with volatile parts replaced (`<n>`, `<id>`, `<path>`, `<time>`), spaces collapsed. */
export function normalizeDetail(detail: string | null | undefined): string {
  if (!detail) return '';
  let text = detail.length > MAX_DETAIL ? detail.slice(0, MAX_DETAIL) : detail;
  for (const [re, token] of VOLATILE) text = text.replace(re, token);
  return text.replace(/\s+/g, ' ').trim();
}

function lower(value: string | null | undefined): string {
  return (value ?? '').trim().toLowerCase();
}

function field(f: FingerprintInput, name: RuleField): string {
  switch (name) {
    case 'detail':
      return f.detail ?? '';
    case 'className':
      return f.className ?? '';
    default: {
      const v = f[name];
      return typeof v === 'string' ? v : '';
    }
  }
}

/** The built-in key: tool, code, category, normalized detail, and the target's class and process. */
export function defaultKey(f: FingerprintInput): string {
  const category = serverCategory(f.code, f.category);
  const parts = [f.tool, f.code ?? '-', category ?? '-', JSON.stringify(normalizeDetail(f.detail))];
  if (f.className) parts.push(`class=${f.className.trim()}`);
  if (f.process) parts.push(`process=${lower(f.process)}`);
  return parts.join(' ');
}

function hashId(key: string): string {
  return `fp${FINGERPRINT_RULES_VERSION}-${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 12)}`;
}

/** The fingerprint by the built-in rules alone. */
export function defaultFingerprint(f: FingerprintInput): Fingerprint {
  const key = defaultKey(f);
  return { id: hashId(key), key, rule: null };
}

/** A matcher; a regex one runs on a `RegexThread` (`primeRuleRegexes`) and keeps each value's answer. */
type Matcher = ((value: string) => boolean) & { regex?: RegexMatches };

/** A user regex's answers so far, by value (clipped to MAX_DETAIL), and how to name it in an error. */
interface RegexMatches {
  pattern: string;
  where: string;
  known: Map<string, boolean>;
}

/** The thread user regexes run on when no batch was primed (started on first use, unref-ed). */
let sharedThread: RegexThread | null = null;

function clipValue(v: string): string {
  return v.length > MAX_DETAIL ? v.slice(0, MAX_DETAIL) : v;
}

/** Test `values` against a rule's regex on the thread, keeping the answers; names the rule past the budget. */
function testOnThread(state: RegexMatches, values: string[], thread: RegexThread): void {
  let results: boolean[];
  try {
    results = thread.testAll(state.pattern, values);
  } catch (err) {
    throw namingRule(state, err);
  }
  keep(state, values, results);
}

/** `testOnThread` awaiting the thread (this one serves other work meanwhile). */
async function testOnThreadAsync(state: RegexMatches, values: string[], thread: RegexThread): Promise<void> {
  let results: boolean[];
  try {
    results = await thread.testAllAsync(state.pattern, values);
  } catch (err) {
    throw namingRule(state, err);
  }
  keep(state, values, results);
}

function keep(state: RegexMatches, values: string[], results: boolean[]): void {
  for (const [i, v] of values.entries()) state.known.set(v, results[i]!);
}

/** A `RegexTimeoutError` as the user reads it: which rule and field, and what to write instead. */
function namingRule(state: RegexMatches, err: unknown): unknown {
  if (!(err instanceof RegexTimeoutError)) return err;
  return new RegexTimeoutError(
    `fingerprint ${state.where} ${err.message}: a regex that backtracks without end (such as (a+)+ or ` +
      '(.*.*)*x); write it without a quantifier inside a repeated group, or use {"contains": ...}',
  );
}

/** Each user regex with the values `inputs` give its field that it has no answer for yet (one batch each). */
function* unprimedBatches(
  rules: readonly CompiledRule[],
  inputs: readonly FingerprintInput[],
): Generator<[RegexMatches, string[]]> {
  for (const r of rules)
    for (const [name, m] of r.matchers) {
      const state = m.regex;
      if (!state) continue;
      const values = new Set<string>();
      for (const f of inputs) {
        const v = clipValue(field(f, name));
        if (!state.known.has(v)) values.add(v);
      }
      yield [state, [...values]];
    }
}

/**
 * Run every user regex over the values `inputs` give its field, in one batch per regex on `thread` (by
 * default one of its own, stopped after): `fingerprintOf` over these inputs then runs no regex here.
 */
export function primeRuleRegexes(
  rules: readonly CompiledRule[],
  inputs: readonly FingerprintInput[],
  thread?: RegexThread,
): void {
  const own = thread ?? new RegexThread();
  try {
    for (const [state, values] of unprimedBatches(rules, inputs)) testOnThread(state, values, own);
  } finally {
    if (!thread) own.close();
  }
}

/** `primeRuleRegexes` without blocking this thread while the regexes run (the MCP server's triage). */
export async function primeRuleRegexesAsync(
  rules: readonly CompiledRule[],
  inputs: readonly FingerprintInput[],
  thread?: RegexThread,
): Promise<void> {
  const own = thread ?? new RegexThread();
  try {
    for (const [state, values] of unprimedBatches(rules, inputs)) await testOnThreadAsync(state, values, own);
  } finally {
    if (!thread) own.close();
  }
}

/** A rule made ready to run: its matchers compiled once. */
export interface CompiledRule {
  rule: FingerprintRule;
  label: string;
  matchers: Array<[RuleField, Matcher]>;
}

function matcherOf(spec: string | { contains: string } | { regex: string }, where: string): Matcher {
  if (typeof spec === 'string') {
    const want = spec.toLowerCase();
    return (v) => v.toLowerCase() === want;
  }
  if ('contains' in spec) {
    const want = spec.contains.toLowerCase();
    return (v) => v.toLowerCase().includes(want);
  }
  // Never run here: a regex that backtracks without end would hang this thread (rule-regex.ts).
  const state: RegexMatches = { pattern: spec.regex, where, known: new Map() };
  const matcher: Matcher = (v) => {
    const value = clipValue(v);
    if (!state.known.has(value)) {
      sharedThread ??= new RegexThread();
      testOnThread(state, [value], sharedThread);
    }
    return state.known.get(value)!;
  };
  matcher.regex = state;
  return matcher;
}

/** Compile user rules (checked by parseFingerprintRules first). */
export function compileRules(rules: readonly FingerprintRule[]): CompiledRule[] {
  return rules.map((rule, i) => {
    const label = rule.name ?? `rule ${i + 1}`;
    const where = `rule ${i + 1}${rule.name ? ` (${JSON.stringify(rule.name)})` : ''}`;
    return {
      rule,
      label,
      matchers: Object.entries(rule.match).map(([k, spec]) => [
        k as RuleField,
        matcherOf(spec!, `${where}: its "${k}" regex`),
      ]),
    };
  });
}

/** The fingerprint of a failure: the first user rule that matches decides, else the built-in rules. */
export function fingerprintOf(f: FingerprintInput, rules: readonly CompiledRule[] = []): Fingerprint {
  for (const r of rules) {
    if (!r.matchers.every(([name, m]) => m(field(f, name)))) continue;
    if (r.rule.set !== undefined) return { id: r.rule.set, key: r.rule.set, rule: r.label };
    const extra = (r.rule.extend ?? []).map((name) => `${name}=${JSON.stringify(field(f, name))}`);
    const key = [defaultKey(f), ...extra].join(' ');
    return { id: hashId(key), key, rule: r.label };
  }
  return defaultFingerprint(f);
}

/** The rules file: `{ "version": 1, "rules": [...] }`. */
export interface FingerprintRulesFile {
  version: 1;
  rules: FingerprintRule[];
}

/** Check a parsed rules file; returns the rules or the problems found (each names the rule). */
export function parseFingerprintRules(
  value: unknown,
): { ok: true; rules: FingerprintRule[] } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const obj = value as { version?: unknown; rules?: unknown } | null;
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    return { ok: false, problems: ['the rules file must be a JSON object {"version": 1, "rules": [...]}'] };
  }
  if (obj.version !== 1) problems.push('"version" must be 1');
  if (!Array.isArray(obj.rules)) return { ok: false, problems: [...problems, '"rules" must be an array'] };
  // Each failure is tried against the rules in turn: 100,000 rules over a fleet's failures never end.
  if (obj.rules.length > MAX_RULES)
    return { ok: false, problems: [...problems, `at most ${MAX_RULES} rules (${obj.rules.length} given)`] };
  const fields = new Set<string>(RULE_FIELDS);
  obj.rules.forEach((raw, i) => {
    const where = `rule ${i + 1}`;
    const r = raw as Partial<FingerprintRule> | null;
    if (typeof r !== 'object' || r === null) {
      problems.push(`${where}: must be an object`);
      return;
    }
    if (typeof r.match !== 'object' || r.match === null || Object.keys(r.match).length === 0) {
      problems.push(`${where}: "match" must name at least one field`);
    } else {
      for (const [k, spec] of Object.entries(r.match)) {
        if (!fields.has(k))
          problems.push(`${where}: cannot match on "${k}" (fields: ${RULE_FIELDS.join(', ')})`);
        else if (typeof spec === 'string') continue;
        else if (
          typeof spec === 'object' &&
          spec !== null &&
          typeof (spec as { contains?: unknown }).contains === 'string'
        )
          continue;
        else if (
          typeof spec === 'object' &&
          spec !== null &&
          typeof (spec as { regex?: unknown }).regex === 'string'
        ) {
          try {
            new RegExp((spec as { regex: string }).regex, 'i');
          } catch (err) {
            problems.push(`${where}: "${k}" regex does not compile: ${(err as Error).message}`);
          }
        } else problems.push(`${where}: "${k}" must be a string, {"contains": "..."} or {"regex": "..."}`);
      }
    }
    const hasSet = r.set !== undefined;
    const hasExtend = r.extend !== undefined;
    if (hasSet === hasExtend) problems.push(`${where}: give exactly one of "set" and "extend"`);
    if (hasSet && (typeof r.set !== 'string' || r.set.trim() === '' || r.set.length > 200)) {
      problems.push(`${where}: "set" must be a name of 1-200 characters`);
    }
    if (hasExtend && (!Array.isArray(r.extend) || r.extend.some((f) => !fields.has(f as string)))) {
      problems.push(`${where}: "extend" must list fields among ${RULE_FIELDS.join(', ')}`);
    }
    if (r.name !== undefined && typeof r.name !== 'string')
      problems.push(`${where}: "name" must be a string`);
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, rules: obj.rules as FingerprintRule[] };
}
