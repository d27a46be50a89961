import { MCEC_TOOL_NAMES } from '../contract/tool-catalog.js';
import { ERROR_CATEGORIES } from '../contract/types.js';
import { jsonEscaped, jsonForms } from './echoes.js';
import { MIN_IMAGE_TEXT, scrubImageText } from './image-text.js';
import { looksLikeCredential, scrubInlineSecrets } from './inline-secrets.js';
import { secretKeyHint, secretKeyMatcher } from './secret-keys.js';
import { type SecretSource, SecretStore } from './secret-store.js';
import {
  hideAnswerText,
  hideNestedTypedText,
  MIN_ECHOED_TYPED_TEXT,
  rememberedTypedText,
  scrubTypedCommands,
  typedTextEchoes,
  typedTextMarker,
  typedTextReplacements,
} from './typed-text.js';

export {
  MAX_SCRUBBED_SECRET,
  MIN_SCRUBBED_SECRET,
  SECRET_BUDGET,
  type SecretSource,
} from './secret-store.js';

import {
  expectArray,
  expectBoolean,
  expectNumber,
  expectOptions,
  expectRegExp,
  expectStringItem,
  expectStringOrRegExp,
} from '../util/expect.js';

/** What replaces a secret. */
export const REDACTED = '[redacted]';
/** What replaces a value nested deeper than `maxDepth`. */
export const TOO_DEEP = '[too deep]';
/** What replaces a reference back to an enclosing object. */
export const CYCLE = '[cycle]';

export interface RedactOptions {
  /** Extra secret keys: strings match normalized keys exactly, regexes are tested on the raw key. */
  keys?: Array<string | RegExp>;
  /** Patterns scrubbed out of every stored string (replaced by `[redacted]`). */
  patterns?: RegExp[];
  /** Secrets known up front (configuration): scrubbed, with their encoded forms, from everything stored. */
  secrets?: string[];
  /** Store text typed into windows / set on the clipboard as is instead of its length. */
  keepTypedText?: boolean;
  /** Values nested deeper than this become `[too deep]` (default 200). */
  maxDepth?: number;
  /** Scrub inline assignments such as `password=...` or `--token ...` from strings (default true). */
  inlineSecrets?: boolean;
}

/** The call a stored value belongs to: its typed text is scrubbed from the value's echoes of it. */
export interface RedactContext {
  tool: string;
  args: unknown;
}

export interface Redactor {
  /** Deep copy of a call's arguments: secret keys redacted (values remembered), typed text as its length. */
  redactArgs(tool: string, args: unknown): unknown;
  /**
   * Deep copy of server output (or any other stored value) with secret-key values redacted and remembered
   * secrets, patterns, inline secrets and image bytes scrubbed; with `call`, that call's typed text too.
   */
  redact(value: unknown, call?: RedactContext): unknown;
  /** One string with remembered secrets, user patterns, inline secrets and base64 image runs scrubbed out. */
  scrubText(text: string, call?: RedactContext): string;
  /** Scrub this value wherever it appears from now on (a secret known later; kept like `options.secrets`). */
  rememberSecret(value: string): void;
  /**
   * The same for a credential a transport carried (an Authorization header a proxy saw, and its bare
   * token), kept apart: thousands of distinct tokens push out only older tokens, never a configured secret.
   */
  rememberHeaderSecret(value: string): void;
  /** The same for a transport's session token (Mcp-Session-Id), kept apart so thousands never push out the rest. */
  rememberTransportSecret(value: string): void;
}

/** Depth of a secret-keyed value searched for secret strings to remember. */
const MAX_SECRET_DEPTH = 20;
const DEFAULT_MAX_DEPTH = 200;
/** Learned error codes kept as protected words at most. */
const MAX_VOCABULARY = 2000;

/** Keys whose short identifier values are codes, categories or tool names: evidence, never blanked by
 * server-taught secrets or inline patterns (only by secrets from arguments and configuration). */
const PROTECTED_FIELDS = new Set(['code', 'category', 'errorCode', 'errorCategory', 'tool', 'method']);
/**
 * Where a value stands, for the rules that follow the protocol's structure (README "Protocol structure"):
 * - `data`: anything (arguments, results, events);
 * - `schema`: a JSON Schema (a tool's inputSchema/outputSchema or a subschema): its `description`, `title`
 *   and `$comment` are prose, its `properties`-like maps hold names;
 * - `names`: a JSON Schema's `properties` (or `$defs`, ...): keys are argument names, never secret keys,
 *   and each schema under them stays a schema;
 * - `described`: an object whose `title` and `description` are server-authored prose (serverInfo, a tool's
 *   annotations);
 * - `commandAccess`: MCEC's commandAccess block, whose `note` is prose;
 * - `meta`: an MCP message's `_meta`, whose `progressToken` is the request's id for its progress.
 */
type Place = 'data' | 'schema' | 'names' | 'described' | 'commandAccess' | 'meta';
/** How one string is scrubbed: as data, as a protected identifier (codes), or as server-authored prose. */
type StringMode = 'data' | 'protected' | 'prose';

/** A JSON Schema's prose keywords. */
const SCHEMA_PROSE = new Set(['description', 'title', '$comment']);
/** JSON Schema keywords holding maps from a name to a subschema. */
const SCHEMA_NAME_MAPS = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
]);
/** JSON Schema keywords holding one subschema or an array of them. */
const SCHEMA_SUBSCHEMAS = new Set([
  'items',
  'additionalItems',
  'prefixItems',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'anyOf',
  'oneOf',
  'allOf',
]);
const DESCRIBED_PROSE = new Set(['title', 'description']);
/**
 * Fields that name the `value` beside them: a header, env or tag list's `{name|key: 'Authorization', value}`
 * and a UI element's `{name|automationId: 'API token', value}` (a secret field, as the masker reads it).
 */
const VALUE_NAMING_KEYS = ['name', 'key', 'automationId', 'Name', 'Key', 'AutomationId'] as const;
/** The field a naming field names (`value`, or `Value` as AWS tags and .NET serializers write it). */
const NAMED_VALUE_KEYS = new Set(['value', 'Value']);
const MCEC_TOOL_SET: ReadonlySet<string> = new Set(MCEC_TOOL_NAMES);
const COMMAND_ACCESS_PROSE = new Set(['note']);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A tool definition of a tools/list result: `{name, inputSchema, ...}`. */
function isToolDefinition(o: Record<string, unknown>): boolean {
  return typeof o.name === 'string' && isPlainObject(o.inputSchema);
}

/** A progress notification's params: `{progressToken, progress, ...}` (MCP's notifications/progress). */
function isProgressParams(o: Record<string, unknown>): boolean {
  return typeof o.progress === 'number' && isProgressToken(o.progressToken);
}

/** MCP's progress token: a string or number the client chose to tie progress to its request. */
function isProgressToken(v: unknown): v is string | number {
  return typeof v === 'string' || typeof v === 'number';
}

/** An elicitation request's params: `{message, requestedSchema, ...}` (MCP's elicitation/create, form mode). */
function isElicitationParams(o: Record<string, unknown>): boolean {
  return typeof o.message === 'string' && isPlainObject(o.requestedSchema);
}

/** An initialize result: `{protocolVersion, serverInfo, ...}`. */
function isInitializeResult(o: Record<string, unknown>): boolean {
  return typeof o.protocolVersion === 'string' && isPlainObject(o.serverInfo);
}

/** A name (tool, argument) kept as is: a short string without whitespace. */
function isName(v: string): boolean {
  if (v.length === 0 || v.length > 128) return false;
  for (let i = 0; i < v.length; i++) if (v.charCodeAt(i) <= 32) return false;
  return true;
}

/** What a protected field's value looks like when it is an identifier. */
function isIdentifier(v: string): boolean {
  if (v.length === 0 || v.length > 128) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    const ok =
      (c >= 48 && c <= 57) ||
      (c >= 65 && c <= 90) ||
      (c >= 97 && c <= 122) ||
      c === 45 ||
      c === 95 ||
      c === 46 ||
      c === 47 ||
      c === 58;
    if (!ok) return false;
  }
  return true;
}

/** A value from server output is remembered only when it looks like a credential (`inline-secrets.ts`). */
export { looksLikeCredential };

/**
 * Typed text that is likely a password: no whitespace, 8+ chars, and three of lower case, upper case, digits
 * and symbols (other than `-_.`), as password rules ask. Stricter than `looksLikeCredential`: what an agent
 * types is often a file name (`report-2026.txt`), an address (`john.doe@contoso.com`) or a date, which later
 * titles and fields show as evidence.
 */
function looksLikeTypedPassword(v: string): boolean {
  if (v.length < 8) return false;
  let kinds = 0;
  let seen = 0;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c <= 32) return false;
    const kind =
      c >= 48 && c <= 57
        ? 1
        : c >= 65 && c <= 90
          ? 2
          : c >= 97 && c <= 122
            ? 4
            : c === 45 || c === 95 || c === 46
              ? 0
              : 8;
    if ((seen & kind) === 0 && kind !== 0) {
      seen |= kind;
      kinds++;
    }
  }
  return kinds >= 3;
}

/** A value already hidden (typed text's length, `[redacted]`): kept, never taught as a secret. */
function isHiddenText(v: unknown): boolean {
  return typeof v === 'string' && (v === REDACTED || /^\[typed text: \d+ chars\]$/.test(v));
}

function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  // `__proto__` from JSON.parse is an own data property; plain assignment would change the prototype.
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** Typed text longer than this (chars) has its echoes searched in two forms, not six. */
const MAX_ALL_ECHO_FORMS = 4096;

/** Replacement pairs in every JSON form, longest original first (a line before the text inside it). */
function echoPairs(pairs: Array<[string, string]>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const seen = new Set<string>();
  for (const [orig, repl] of pairs) {
    // Long typed text (a pasted file): as sent and JSON-escaped once only; each other form is a pass over it
    // on the proxies' thread (1.1 MB: ~1 s for all five).
    const all = orig.length <= MAX_ALL_ECHO_FORMS;
    const origForms = [orig, ...(all ? jsonForms(orig) : [jsonEscaped(orig)])];
    const replForms = [repl, ...(all ? jsonForms(repl) : [jsonEscaped(repl)])];
    for (let i = 0; i < origForms.length; i++) {
      if (seen.has(origForms[i]!)) continue;
      seen.add(origForms[i]!);
      out.push([origForms[i]!, replForms[i]!]);
    }
  }
  return out.sort((a, b) => b[0].length - a[0].length);
}

class SecretRedactor implements Redactor {
  private readonly isSecretKey: (key: string) => boolean;
  private readonly mayAssignKey: (text: string) => boolean;
  private readonly patterns: RegExp[];
  private readonly keepTypedText: boolean;
  private readonly maxDepth: number;
  private readonly inlineSecrets: boolean;
  private readonly store = new SecretStore();
  /** MCEC's tool names (the catalog), categories and error codes seen: inline assignments never redact them. */
  private readonly vocabulary = new Set<string>([...MCEC_TOOL_NAMES, ...ERROR_CATEGORIES]);
  private readonly learnedCodes = new Set<string>();
  /** Where values found during the current walk come from. */
  private source: SecretSource = 'output';
  /** Walking an MCEC tool's arguments: their top-level `value` is an element selector, never a named secret. */
  private selectorArgs = false;
  /** The current call's typed-text echoes (original, replacement), longest first. */
  private echoes: Array<[string, string]> = [];
  private readonly inline = {
    isSecretKey: (key: string) => this.isSecretKey(key),
    mayAssignKey: (text: string) => this.mayAssignKey(text),
    isProtected: (value: string) => this.vocabulary.has(value),
    found: (value: string) => this.learn(value, this.source),
  };
  private readonly inlineProse = { ...this.inline, prose: true };

  constructor(options: RedactOptions) {
    this.isSecretKey = secretKeyMatcher(options.keys);
    this.mayAssignKey = secretKeyHint(options.keys);
    this.patterns = (options.patterns ?? []).map(
      (re) => new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`),
    );
    this.keepTypedText = options.keepTypedText === true;
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.inlineSecrets = options.inlineSecrets !== false;
    for (const secret of options.secrets ?? []) this.learn(secret, 'config');
  }

  rememberSecret(value: string): void {
    this.learn(value, 'config');
  }

  rememberTransportSecret(value: string): void {
    this.learn(value, 'transport');
  }

  rememberHeaderSecret(value: string): void {
    this.learn(value, 'header');
  }

  /** Remember a secret from `source` (and, for `Bearer abc`, the bare credential). */
  private learn(value: unknown, source: SecretSource): void {
    if (typeof value !== 'string') return;
    const v = value.trim();
    if (source === 'output' && (!looksLikeCredential(v) || this.vocabulary.has(v))) return;
    this.store.add(v, source);
    // `Bearer abc`, `Basic abc`: the credential alone shows up too (logs, other headers).
    const scheme = /^(bearer|basic|token|digest)\s+(\S+)$/i.exec(v.slice(0, 4096));
    if (scheme) this.learn(scheme[2]!, source);
  }

  /** Note an error code seen in an envelope as a protected word. */
  private learnCode(code: string): void {
    if (this.vocabulary.has(code) || !isIdentifier(code)) return;
    if (this.learnedCodes.size >= MAX_VOCABULARY) {
      const oldest = this.learnedCodes.values().next().value!;
      this.learnedCodes.delete(oldest);
      this.vocabulary.delete(oldest);
    }
    this.learnedCodes.add(code);
    this.vocabulary.add(code);
  }

  scrubText(text: string, call?: RedactContext): string {
    if (typeof text !== 'string') return text;
    if (call === undefined) return this.scrub(text);
    const saved = this.echoes;
    this.echoes = this.echoesOf(call);
    try {
      return this.scrub(text);
    } finally {
      this.echoes = saved;
    }
  }

  /**
   * The scrubbing pipeline for one string. `protected` keeps codes safe from server-taught values; `prose`
   * (server-authored documentation) skips what reads typing or `key: value` into words: a `chars:` there
   * documents the command, and "credential: HTTP requests" is a sentence.
   */
  private scrub(text: string, mode: StringMode = 'data'): string {
    let out = text;
    for (const [orig, repl] of this.echoes) if (out.includes(orig)) out = out.split(orig).join(repl);
    if (!this.keepTypedText && mode !== 'prose') out = scrubTypedCommands(out);
    if (out.length >= 4 && !this.store.empty) out = this.store.scrub(out, REDACTED, mode === 'protected');
    for (const re of this.patterns) {
      re.lastIndex = 0;
      out = out.replace(re, REDACTED);
    }
    if (mode === 'protected') return out;
    if (this.inlineSecrets && out.length > 5)
      out = scrubInlineSecrets(out, REDACTED, mode === 'prose' ? this.inlineProse : this.inline);
    return out.length >= MIN_IMAGE_TEXT ? scrubImageText(out) : out;
  }

  private echoesOf(call: RedactContext): Array<[string, string]> {
    if (this.keepTypedText) return [];
    const args = call.args;
    if (typeof args !== 'object' || args === null || Array.isArray(args)) return [];
    try {
      return echoPairs(typedTextEchoes(String(call.tool), args as Record<string, unknown>));
    } catch {
      return [];
    }
  }

  redact(value: unknown, call?: RedactContext): unknown {
    if (call === undefined || this.keepTypedText) return this.walkRoot(value, undefined, 'output', call);
    // User text in the answer (clipboard get's `text`): its length where it stands, scrubbed from the rest
    // of the answer, and remembered when it looks like a credential (a word like `Save` is not).
    const answer = hideAnswerText(String(call.tool), value);
    for (const text of answer.texts) this.learn(text, 'output');
    const extra = answer.texts
      .filter((t) => t.length >= MIN_ECHOED_TYPED_TEXT)
      .map((t): [string, string] => [t, typedTextMarker(t)]);
    return this.walkRoot(answer.value, undefined, 'output', call, extra);
  }

  redactArgs(tool: string, args: unknown): unknown {
    const plain = typeof args === 'object' && args !== null && !Array.isArray(args);
    if (plain && !this.keepTypedText)
      // Clipboard text is pasted and read back: remembered, so every later echo of it is scrubbed.
      for (const text of rememberedTypedText(String(tool), args as Record<string, unknown>))
        this.learn(text, 'args');
    const typed =
      plain && !this.keepTypedText
        ? typedTextReplacements(String(tool), args as Record<string, unknown>)
        : undefined;
    if (typed && typed.size > 0) this.learnTypedCredentials(String(tool), args as Record<string, unknown>);
    // A typing tool MCEC does not have: typed input nested in its arguments (a form's fields) too.
    const walked = plain && !this.keepTypedText ? this.withNestedHidden(String(tool), args) : args;
    this.selectorArgs = MCEC_TOOL_SET.has(String(tool));
    try {
      return this.walkRoot(walked, typed && typed.size > 0 ? typed : undefined, 'args', undefined);
    } finally {
      this.selectorArgs = false;
    }
  }

  /**
   * Typed text that looks like a password (`looksLikeTypedPassword`) is remembered: the screen shows it
   * afterwards (get-text's OCR, a field's `value` in find and query). Words, file names, addresses stay evidence.
   */
  private learnTypedCredentials(tool: string, args: Record<string, unknown>): void {
    try {
      for (const [text, marker] of typedTextEchoes(tool, args))
        if (marker === typedTextMarker(text) && looksLikeTypedPassword(text.trim())) this.learn(text, 'args');
    } catch {
      // a throwing getter: walkRoot stores nothing of these arguments
    }
  }

  private withNestedHidden(tool: string, args: object): unknown {
    try {
      return hideNestedTypedText(tool, args as Record<string, unknown>).args;
    } catch {
      return REDACTED; // a throwing getter: store nothing of it, as walkRoot does
    }
  }

  private walkRoot(
    value: unknown,
    topLevel: Map<string, string> | undefined,
    source: SecretSource,
    call: RedactContext | undefined,
    extraEchoes: Array<[string, string]> = [],
  ): unknown {
    const savedSource = this.source;
    const savedEchoes = this.echoes;
    this.source = source;
    try {
      this.echoes = call ? this.echoesOf(call) : [];
      if (extraEchoes.length > 0)
        this.echoes = [...this.echoes, ...echoPairs(extraEchoes)].sort((a, b) => b[0].length - a[0].length);
      const version = this.store.version;
      const out = this.frozenCopy(value, topLevel);
      if (this.store.version === version) return out;
      // A secret met late in the walk may sit in strings copied before it (rare): copy again, knowing it.
      // Still frozen: values it re-learns (ones a flood evicted) are redacted where they stand anyway.
      return this.frozenCopy(value, topLevel);
    } catch {
      // Only a pathological input (a throwing getter, a hostile proxy object) gets here: store nothing of it.
      return REDACTED;
    } finally {
      this.source = savedSource;
      this.echoes = savedEchoes;
    }
  }

  /** One copy with the automata kept as they are; what it learned applies from the next scan on. */
  private frozenCopy(value: unknown, topLevel: Map<string, string> | undefined): unknown {
    this.store.freeze();
    try {
      return this.copy(value, 0, new Set(), topLevel);
    } finally {
      this.store.thaw();
    }
  }

  private copy(
    value: unknown,
    depth: number,
    ancestors: Set<object>,
    topLevel?: Map<string, string>,
    place: Place = 'data',
  ): unknown {
    switch (typeof value) {
      case 'string':
        return this.scrub(value);
      case 'number':
      case 'boolean':
      case 'undefined':
        return value;
      case 'bigint':
        return value.toString();
      case 'function':
      case 'symbol':
        return undefined;
    }
    if (value === null) return null;
    if (depth >= this.maxDepth) return TOO_DEEP;
    const obj = value as object;
    if (ancestors.has(obj)) return CYCLE;
    if (ArrayBuffer.isView(obj)) return `[binary: ${obj.byteLength} bytes]`;
    if (obj instanceof ArrayBuffer) return `[binary: ${obj.byteLength} bytes]`;
    if (obj instanceof Date) return Number.isNaN(obj.getTime()) ? null : obj.toISOString();
    if (obj instanceof Error) {
      return { name: obj.name, message: this.scrub(obj.message) };
    }
    ancestors.add(obj);
    try {
      if (Array.isArray(obj)) {
        // An array of subschemas (anyOf, prefixItems) stays schemas; any other array is data.
        const inner: Place = place === 'schema' ? 'schema' : 'data';
        const out = new Array(obj.length);
        for (let i = 0; i < obj.length; i++) {
          const v = obj[i];
          out[i] =
            typeof v === 'string' ? this.scrub(v) : this.copy(v, depth + 1, ancestors, undefined, inner);
        }
        return out;
      }
      if (obj instanceof Map) return this.copy(Object.fromEntries(obj), depth, ancestors);
      if (obj instanceof Set) return this.copy([...obj], depth, ancestors);
      const src = obj as Record<string, unknown>;
      if (typeof src.toJSON === 'function') return this.copy(src.toJSON(), depth + 1, ancestors);
      const out: Record<string, unknown> = {};
      const keys = Object.keys(src);
      // Codes first: a detail next to its code must not be able to teach that code away.
      for (const key of keys) {
        if (key !== 'code' && key !== 'errorCode' && key !== 'category' && key !== 'errorCategory') continue;
        const v = src[key];
        if (typeof v === 'string' && isIdentifier(v)) this.learnCode(v);
      }
      const tool = place === 'data' && isToolDefinition(src);
      const initialize = place === 'data' && !tool && isInitializeResult(src);
      // A progress token is an id, not a credential (its key says "token"): kept, a string one scrubbed as data.
      const progressIds = place === 'meta' || (place === 'data' && isProgressParams(src));
      const elicitation = place === 'data' && isElicitationParams(src);
      const namedSecret =
        place === 'data' &&
        !(depth === 0 && this.selectorArgs) &&
        (Object.hasOwn(src, 'value') || Object.hasOwn(src, 'Value')) &&
        this.namesSecretValue(src);
      for (const key of keys) {
        const v = src[key];
        // A remembered secret used as a key (a map keyed by a token) is scrubbed too; only trusted ones, so
        // server-taught values never rename the structure.
        const name = this.keyName(key, out);
        // A JSON Schema's property names are argument names: the schema under `token` stays a schema.
        if (place === 'names' && isPlainObject(v)) {
          setKey(out, name, this.copy(v, depth + 1, ancestors, undefined, 'schema'));
          continue;
        }
        if (progressIds && key === 'progressToken' && isProgressToken(v)) {
          setKey(out, name, typeof v === 'number' ? v : this.scrub(v));
          continue;
        }
        if (this.isSecretKey(key)) {
          setKey(out, name, this.secretValue(v));
          continue;
        }
        const typed = topLevel?.get(key);
        if (typed !== undefined) {
          setKey(out, name, typed);
          continue;
        }
        if (namedSecret && NAMED_VALUE_KEYS.has(key) && !isHiddenText(v)) {
          setKey(out, name, this.secretValue(v));
          continue;
        }
        const inner =
          elicitation && key === 'requestedSchema' ? 'schema' : this.placeOf(place, key, v, tool, initialize);
        if (typeof v === 'string') {
          setKey(out, name, this.scrubField(place, key, v, tool, initialize));
          continue;
        }
        setKey(out, name, this.copy(v, depth + 1, ancestors, undefined, inner));
      }
      return out;
    } finally {
      ancestors.delete(obj);
    }
  }

  /** Where the value under `key` of an object standing at `place` stands. */
  private placeOf(place: Place, key: string, v: unknown, tool: boolean, initialize: boolean): Place {
    if (place === 'schema') {
      if (SCHEMA_NAME_MAPS.has(key)) return 'names';
      return SCHEMA_SUBSCHEMAS.has(key) ? 'schema' : 'data';
    }
    if (tool) {
      if (key === 'inputSchema' || key === 'outputSchema') return 'schema';
      if (key === 'annotations') return 'described';
    }
    if (initialize && key === 'serverInfo') return 'described';
    if (key === 'commandAccess' && isPlainObject(v)) return 'commandAccess';
    if (key === '_meta' && isPlainObject(v)) return 'meta';
    return 'data';
  }

  /** `key` with remembered argument and configuration secrets scrubbed, made unique among `out`'s keys. */
  private keyName(key: string, out: Record<string, unknown>): string {
    if (key.length < 4 || this.store.empty) return key;
    const scrubbed = this.store.scrub(key, REDACTED, true);
    if (scrubbed === key) return key;
    let name = scrubbed;
    for (let n = 2; Object.hasOwn(out, name); n++) name = `${scrubbed} (${n})`;
    return name;
  }

  /** One string field of an object standing at `place`. */
  private scrubField(place: Place, key: string, v: string, tool: boolean, initialize: boolean): string {
    // Names are not secrets: a tool's name and a schema's `required` argument names stay as they are.
    if (tool && key === 'name' && isName(v)) return v;
    const prose =
      (place === 'schema' && SCHEMA_PROSE.has(key)) ||
      ((place === 'described' || tool) && DESCRIBED_PROSE.has(key)) ||
      (place === 'commandAccess' && COMMAND_ACCESS_PROSE.has(key)) ||
      (initialize && key === 'instructions');
    if (prose) return this.scrub(v, 'prose');
    return this.scrub(v, PROTECTED_FIELDS.has(key) && isIdentifier(v) ? 'protected' : 'data');
  }

  /** Whether a field of `src` naming its `value` (`VALUE_NAMING_KEYS`) is a secret key. */
  private namesSecretValue(src: Record<string, unknown>): boolean {
    for (const key of VALUE_NAMING_KEYS) {
      const v = src[key];
      if (typeof v === 'string' && v.length <= 128 && this.isSecretKey(v)) return true;
    }
    return false;
  }

  /** `[redacted]` for a value under a secret key, remembering its strings; empty values stay as they are. */
  private secretValue(v: unknown): unknown {
    if (v === null || v === undefined || typeof v === 'boolean' || v === '') return v;
    this.collectSecrets(v, 0);
    return REDACTED;
  }

  private collectSecrets(v: unknown, depth: number): void {
    if (typeof v === 'string') this.learn(v, this.source);
    else if (typeof v === 'number' || typeof v === 'bigint') this.learn(String(v), this.source);
    else if (typeof v === 'object' && v !== null && depth < MAX_SECRET_DEPTH && !ArrayBuffer.isView(v)) {
      for (const child of Object.values(v)) this.collectSecrets(child, depth + 1);
    }
  }
}

/** A redactor for one recorder: secret keys (defaults + `options.keys`), patterns and remembered values. */
export function createRedactor(options: RedactOptions = {}): Redactor {
  const o = expectOptions(options);
  expectArray(o.keys, 'options.keys', expectStringOrRegExp);
  expectArray(o.patterns, 'options.patterns', expectRegExp);
  expectArray(o.secrets, 'options.secrets', expectStringItem);
  expectBoolean(o.keepTypedText, 'options.keepTypedText');
  expectNumber(o.maxDepth, 'options.maxDepth', { min: 1, integer: true });
  expectBoolean(o.inlineSecrets, 'options.inlineSecrets');
  return new SecretRedactor(options);
}
