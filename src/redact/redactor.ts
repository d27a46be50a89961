import { MIN_IMAGE_TEXT, scrubImageText } from './image-text.js';
import { scrubInlineSecrets } from './inline-secrets.js';
import { secretKeyMatcher } from './secret-keys.js';
import { typedTextReplacements } from './typed-text.js';

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
  /** Store text typed into windows / set on the clipboard as is instead of its length. */
  keepTypedText?: boolean;
  /** Values nested deeper than this become `[too deep]` (default 200). */
  maxDepth?: number;
  /** Scrub inline assignments such as `password=...` or `--token ...` from strings (default true). */
  inlineSecrets?: boolean;
}

export interface Redactor {
  /** Deep copy of a call's arguments: secret keys redacted (values remembered), typed text as its length. */
  redactArgs(tool: string, args: unknown): unknown;
  /** Deep copy with secret-key values redacted and remembered secrets, patterns and image bytes scrubbed. */
  redact(value: unknown): unknown;
  /** One string with remembered secrets, user patterns and base64 image runs scrubbed out. */
  scrubText(text: string): string;
  /** Scrub this value wherever it appears from now on (e.g. an Authorization header seen by a proxy). */
  rememberSecret(value: string): void;
}

/** Secrets shorter than this are redacted under their key but not searched for in other strings. */
export const MIN_SCRUBBED_SECRET = 4;
/** Longer values (a blob under a `cookie` key, say) are redacted under their key but not searched for. */
const MAX_SCRUBBED_SECRET = 16 * 1024;
/** Distinct secrets remembered at most; the oldest is forgotten first (a rotating token stays bounded). */
const MAX_SECRETS = 1000;
/** Depth of a secret-keyed value searched for secret strings to remember. */
const MAX_SECRET_DEPTH = 20;
const DEFAULT_MAX_DEPTH = 200;

/** JSON string text as the MCEC server writes it: `+ < > & '` and non-ASCII as `\uXXXX` (mcec-wire §4). */
function serverEscaped(json: string): string {
  let out = '';
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    out +=
      c > 0x7e || c === 43 || c === 60 || c === 62 || c === 38 || c === 39
        ? `\\u${c.toString(16).toUpperCase().padStart(4, '0')}`
        : json[i];
  }
  return out;
}

function setKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  // `__proto__` from JSON.parse is an own data property; plain assignment would change the prototype.
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

class SecretRedactor implements Redactor {
  private readonly isSecretKey: (key: string) => boolean;
  private readonly patterns: RegExp[];
  private readonly keepTypedText: boolean;
  private readonly maxDepth: number;
  private readonly inlineSecrets: boolean;
  private readonly remember = (value: string): void => this.rememberSecret(value);
  private readonly secrets = new Set<string>();
  /** `secrets` longest first, so a secret containing another is replaced whole. */
  private ordered: string[] = [];
  private version = 0;

  constructor(options: RedactOptions) {
    this.isSecretKey = secretKeyMatcher(options.keys);
    this.patterns = (options.patterns ?? []).map(
      (re) => new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`),
    );
    this.keepTypedText = options.keepTypedText === true;
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.inlineSecrets = options.inlineSecrets !== false;
  }

  rememberSecret(value: string): void {
    if (typeof value !== 'string') return;
    const v = value.trim();
    if (v.length < MIN_SCRUBBED_SECRET || v.length > MAX_SCRUBBED_SECRET) return;
    const variants = [v];
    // `Bearer abc`, `Basic abc`: the credential alone shows up too (logs, other headers).
    const scheme = /^(bearer|basic|token|digest)\s+(\S+)$/i.exec(v.slice(0, 4096));
    if (scheme && scheme[2]!.length >= MIN_SCRUBBED_SECRET) variants.push(scheme[2]!);
    for (const s of [...variants]) {
      // The same value as it appears inside JSON text: standard escapes, and the server's `\uXXXX` ones.
      const json = JSON.stringify(s).slice(1, -1);
      if (json !== s) variants.push(json);
      const server = serverEscaped(json);
      if (server !== json) variants.push(server);
    }
    let added = false;
    for (const s of variants) {
      if (this.secrets.has(s)) continue;
      this.secrets.add(s);
      added = true;
      if (this.secrets.size > MAX_SECRETS) this.secrets.delete(this.secrets.values().next().value!);
    }
    if (!added) return;
    this.ordered = [...this.secrets].sort((a, b) => b.length - a.length);
    this.version++;
  }

  scrubText(text: string): string {
    if (typeof text !== 'string' || text.length < MIN_SCRUBBED_SECRET) {
      // Too short for a remembered secret, an inline assignment or image bytes; only user patterns apply.
      if (typeof text !== 'string' || this.patterns.length === 0) return text;
    }
    let out = text;
    for (const s of this.ordered) {
      if (out.length < s.length) continue;
      if (out.includes(s)) out = out.split(s).join(REDACTED);
    }
    for (const re of this.patterns) {
      re.lastIndex = 0;
      out = out.replace(re, REDACTED);
    }
    if (this.inlineSecrets && out.length > 5) out = scrubInlineSecrets(out, REDACTED, this.remember);
    return out.length >= MIN_IMAGE_TEXT ? scrubImageText(out) : out;
  }

  redact(value: unknown): unknown {
    return this.walkRoot(value, undefined);
  }

  redactArgs(tool: string, args: unknown): unknown {
    const plain = typeof args === 'object' && args !== null && !Array.isArray(args);
    const typed =
      plain && !this.keepTypedText
        ? typedTextReplacements(String(tool), args as Record<string, unknown>)
        : undefined;
    return this.walkRoot(args, typed && typed.size > 0 ? typed : undefined);
  }

  private walkRoot(value: unknown, topLevel: Map<string, string> | undefined): unknown {
    const version = this.version;
    try {
      const out = this.copy(value, 0, new Set(), topLevel);
      if (this.version === version) return out;
      // A secret met late in the walk may sit in strings copied before it (rare): copy again, knowing it.
      return this.copy(value, 0, new Set(), topLevel);
    } catch {
      // Only a pathological input (a throwing getter, a hostile proxy object) gets here: store nothing of it.
      return REDACTED;
    }
  }

  private copy(
    value: unknown,
    depth: number,
    ancestors: Set<object>,
    topLevel?: Map<string, string>,
  ): unknown {
    switch (typeof value) {
      case 'string':
        return this.scrubText(value);
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
      return { name: obj.name, message: this.scrubText(obj.message) };
    }
    ancestors.add(obj);
    try {
      if (Array.isArray(obj)) {
        const out = new Array(obj.length);
        for (let i = 0; i < obj.length; i++) {
          const v = obj[i];
          out[i] = typeof v === 'string' ? this.scrubText(v) : this.copy(v, depth + 1, ancestors);
        }
        return out;
      }
      if (obj instanceof Map) return this.copy(Object.fromEntries(obj), depth, ancestors);
      if (obj instanceof Set) return this.copy([...obj], depth, ancestors);
      const src = obj as Record<string, unknown>;
      if (typeof src.toJSON === 'function') return this.copy(src.toJSON(), depth + 1, ancestors);
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(src)) {
        const v = src[key];
        if (this.isSecretKey(key)) {
          setKey(out, key, this.secretValue(v));
          continue;
        }
        const typed = topLevel?.get(key);
        if (typed !== undefined) {
          setKey(out, key, typed);
          continue;
        }
        setKey(out, key, typeof v === 'string' ? this.scrubText(v) : this.copy(v, depth + 1, ancestors));
      }
      return out;
    } finally {
      ancestors.delete(obj);
    }
  }

  /** `[redacted]` for a value under a secret key, remembering its strings; empty values stay as they are. */
  private secretValue(v: unknown): unknown {
    if (v === null || v === undefined || typeof v === 'boolean' || v === '') return v;
    this.collectSecrets(v, 0);
    return REDACTED;
  }

  private collectSecrets(v: unknown, depth: number): void {
    if (typeof v === 'string') this.rememberSecret(v);
    else if (typeof v === 'number' || typeof v === 'bigint') this.rememberSecret(String(v));
    else if (typeof v === 'object' && v !== null && depth < MAX_SECRET_DEPTH && !ArrayBuffer.isView(v)) {
      for (const child of Object.values(v)) this.collectSecrets(child, depth + 1);
    }
  }
}

/** A redactor for one recorder: secret keys (defaults + `options.keys`), patterns and remembered values. */
export function createRedactor(options: RedactOptions = {}): Redactor {
  return new SecretRedactor(options);
}
