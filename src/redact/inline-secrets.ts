/**
 * Secrets written inline in text, found without any remembered value:
 * - assignments `password=hunter2`, `token: abc`, `--api-key abc`, `Authorization: Bearer abc`, and the
 *   same in JSON text at any escape level (`"password":"x"`, `{\"passwordValue\":\"x\"}`,
 *   `\u0022otp\u0022:\u00221234\u0022`), for every key the secret-key matcher accepts;
 * - the password of URL userinfo (`https://user:pw@host`, also with JSON-escaped slashes);
 * - credentials in the formats GitHub secret scanning knows (GitHub, GitLab, Slack, Stripe, AWS, Google,
 *   npm and OpenAI tokens, JWTs, PEM private key blocks).
 * Only `=`/`:` assignments and `-`/`--` flags count (prose like "the token expired" is left alone). A value
 * that is a protected word (a tool name, an error code or category) is never redacted by an assignment.
 * No regex with large counted repeats or nested quantifiers runs; the assignment scan reads at most 1 MiB.
 */
import { replaceSpans, type Span } from './automaton.js';
import { secretKeyHint, secretKeyMatcher } from './secret-keys.js';

/** Longer strings are not scanned for assignments (they are payloads, not command lines). */
const MAX_SCAN = 1024 * 1024;
/** A quoted value is read this far at most; an unclosed one (a cut excerpt) is redacted to here. */
const MAX_VALUE = 4096;
const DEFAULT_HINT = secretKeyHint();
/** A key: a word of up to 64 chars, optionally after `-`, `--` or `/`. */
const IDENT = /(?<![A-Za-z0-9_])(--?|\/)?([A-Za-z][A-Za-z0-9_.-]{0,63})/g;
const SCHEME = /^(?:bearer|basic|token|digest)[ \t]+/i;

export interface InlineOptions {
  /** Which keys hold secrets. */
  isSecretKey: (key: string) => boolean;
  /**
   * False when the text cannot assign any key `isSecretKey` accepts (a cheap test that skips the scan);
   * by default the default keys' hint, which misses keys a user added (`secretKeyHint(keys)` has them).
   */
  mayAssignKey?: (text: string) => boolean;
  /** Values an assignment must not redact (tool names, error codes, categories). */
  isProtected?: (value: string) => boolean;
  /** Called with each value found (for remembering). */
  found?: (value: string) => void;
  /**
   * The text is server-authored prose (a tool description, instructions): only `key=value` with the value
   * right after the `=`, and JSON `"key":"value"`, are assignments; `key: value` and `--key value` are
   * sentences there ("credential: HTTP requests").
   */
  prose?: boolean;
}

interface Quote {
  /** The quote token as written (`"`, `\"`, `\\\"`, `\u0022`, `'`). */
  token: string;
  /** Backslashes before the quote char. */
  slashes: number;
  /** `"`-like (JSON) or `'`. */
  kind: 'dq' | 'u' | 'sq';
}

/** The quote token at `i`, if any. */
function quoteAt(s: string, i: number): Quote | undefined {
  const c = s.charCodeAt(i);
  if (c === 34) return { token: '"', slashes: 0, kind: 'dq' };
  if (c === 39) return { token: "'", slashes: 0, kind: 'sq' };
  if (c !== 92) return undefined;
  let j = i;
  while (j < s.length && j - i < 16 && s.charCodeAt(j) === 92) j++;
  const slashes = j - i;
  if (s.charCodeAt(j) === 34) return { token: s.slice(i, j + 1), slashes, kind: 'dq' };
  if (s.startsWith('u0022', j)) return { token: s.slice(i, j + 5), slashes, kind: 'u' };
  return undefined;
}

/** Where the value opened by `q` (starting at `from`) closes, or -1 within MAX_VALUE. */
function closingAt(s: string, from: number, q: Quote): number {
  const limit = Math.min(s.length, from + MAX_VALUE);
  if (q.kind === 'sq') {
    const end = s.indexOf("'", from);
    return end !== -1 && end < limit ? end : -1;
  }
  const needle = q.kind === 'dq' ? '"' : 'u0022';
  let i = from;
  for (;;) {
    const at = s.indexOf(needle, i);
    if (at === -1 || at >= limit) return -1;
    let k = at;
    while (k > from && s.charCodeAt(k - 1) === 92) k--;
    // The closing quote has exactly the opening's backslashes; more means a quote inside the value.
    if (at - k === q.slashes) return k;
    i = at + needle.length;
  }
}

function isStop(c: number, escapedKey: boolean): boolean {
  return (
    c === 32 ||
    c === 9 ||
    c === 10 ||
    c === 13 ||
    c === 34 ||
    c === 39 ||
    c === 38 || // &
    c === 59 || // ;
    c === 44 || // ,
    c === 125 || // }
    c === 93 || // ]
    c === 41 || // )
    c === 60 || // <
    c === 62 || // >
    (escapedKey && c === 92)
  );
}

/** A range of the text to replace. */
type Edit = Span;

function skipBlanks(s: string, i: number): number {
  let j = i;
  while (j < s.length && j - i < 16 && (s.charCodeAt(j) === 32 || s.charCodeAt(j) === 9)) j++;
  return j;
}

/** Unescape a JSON-escaped value as far as it goes (for remembering the secret itself). */
function unescapeJson(v: string): string {
  let cur = v;
  for (let level = 0; level < 4 && cur.includes('\\'); level++) {
    try {
      cur = JSON.parse(`"${cur}"`) as string;
    } catch {
      break;
    }
  }
  return cur;
}

/** The assignments' value ranges to redact. */
function assignments(text: string, replacement: string, options: InlineOptions, edits: Edit[]): void {
  if (text.length > MAX_SCAN || !(options.mayAssignKey ?? DEFAULT_HINT)(text)) return;
  IDENT.lastIndex = 0;
  for (let m = IDENT.exec(text); m !== null; m = IDENT.exec(text)) {
    const flag = m[1];
    const key = m[2]!;
    // A key right after a JSON escape (`\npassword=`, `\u0022otp\u0022`): the escape is not part of it
    // (or it is: `C:\token=`); either reading makes it a key.
    const escaped =
      !flag && m.index > 0 && text.charCodeAt(m.index - 1) === 92
        ? /^u[0-9a-fA-F]{4}/.test(key)
          ? key.slice(5)
          : key.slice(1)
        : undefined;
    if (!options.isSecretKey(key) && !(escaped && options.isSecretKey(escaped))) continue;
    let i = m.index + m[0].length;
    const keyQuote = flag ? undefined : quoteAt(text, i);
    if (keyQuote) i += keyQuote.token.length;
    const afterKey = i;
    if (options.prose && !keyQuote) {
      // Prose: only `key=value`, nothing between.
      if (text.charCodeAt(i) !== 61 || i + 1 >= text.length || text.charCodeAt(i + 1) <= 32) continue;
    }
    i = skipBlanks(text, i);
    const sep = text.charCodeAt(i);
    if (sep === 61 || sep === 58) {
      i = skipBlanks(text, i + 1);
    } else if ((flag === '-' || flag === '--') && i > afterKey && i < text.length) {
      // `--password hunter2`: a flag and its value.
    } else continue;
    if (i >= text.length) continue;
    const q = quoteAt(text, i);
    let start: number;
    let end: number;
    let valueStart: number;
    let valueEnd: number;
    if (q && (q.kind === 'sq' || !keyQuote || q.slashes === keyQuote.slashes)) {
      valueStart = i + q.token.length;
      const close = closingAt(text, valueStart, q);
      valueEnd = close === -1 ? Math.min(text.length, valueStart + MAX_VALUE) : close;
      // Outside JSON the quotes go with the value (`PASSWORD="two words"` -> `PASSWORD=[redacted]`).
      start = keyQuote ? valueStart : i;
      end = keyQuote || close === -1 ? valueEnd : valueEnd + q.token.length;
    } else {
      const scheme = SCHEME.exec(text.slice(i, i + 16));
      valueStart = i + (scheme ? scheme[0].length : 0);
      let j = valueStart;
      const escapedKey = keyQuote !== undefined && keyQuote.slashes > 0;
      while (j < text.length && j - valueStart < MAX_VALUE && !isStop(text.charCodeAt(j), escapedKey)) j++;
      valueEnd = j;
      start = i;
      end = j;
    }
    const value = text.slice(valueStart, valueEnd);
    if (value.length === 0 || options.isProtected?.(value)) continue;
    // Already redacted here (a second pass, or typed text): nothing to do.
    if (text.startsWith(replacement, valueStart) || text.startsWith('[typed text: ', valueStart)) continue;
    edits.push({ start, end });
    options.found?.(keyQuote ? unescapeJson(value) : value);
    IDENT.lastIndex = Math.max(IDENT.lastIndex, end);
  }
}

/** The password of every URL userinfo (`scheme://user:pw@host`). */
function userinfo(text: string, options: InlineOptions, edits: Edit[]): void {
  if (text.indexOf('@') === -1) return;
  for (const marker of ['://', ':\\/\\/']) {
    let from = 0;
    for (;;) {
      const at = text.indexOf(marker, from);
      if (at === -1) break;
      from = at + marker.length;
      const start = from;
      let end = start;
      let lastAt = -1;
      while (end < text.length && end - start < 512) {
        const c = text.charCodeAt(end);
        if (c === 47 || c === 63 || c === 35 || c <= 32 || c === 34 || c === 39 || c === 60 || c === 62)
          break;
        if (c === 92 && text.charCodeAt(end + 1) === 47) break; // `\/`
        if (c === 64) lastAt = end;
        end++;
      }
      if (lastAt === -1) continue;
      const colon = text.indexOf(':', start);
      if (colon === -1 || colon >= lastAt - 1) continue;
      const pw = text.slice(colon + 1, lastAt);
      if (pw === '[redacted]' || pw.startsWith('[typed text: ')) continue;
      edits.push({ start: colon + 1, end: lastAt });
      let decoded = pw;
      try {
        decoded = decodeURIComponent(pw);
      } catch {
        // keep it as written
      }
      options.found?.(decoded);
    }
  }
}

interface TokenFormat {
  prefix: string;
  /** Chars that continue the token. */
  chars: (c: number) => boolean;
  /** Chars after the prefix it needs to count. */
  min: number;
}

const alnum = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const alnumUnderscore = (c: number): boolean => alnum(c) || c === 95;
const alnumDash = (c: number): boolean => alnum(c) || c === 45;
const base64url = (c: number): boolean => alnum(c) || c === 45 || c === 95;
const upperDigit = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90);

/** Token formats from GitHub secret scanning's partner patterns (the common ones an agent may hold). */
const TOKEN_FORMATS: TokenFormat[] = [
  ...['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'].map((prefix) => ({ prefix, chars: alnum, min: 30 })),
  { prefix: 'github_pat_', chars: alnumUnderscore, min: 40 },
  { prefix: 'glpat-', chars: base64url, min: 20 },
  ...['xoxb-', 'xoxp-', 'xoxa-', 'xoxr-', 'xoxs-', 'xapp-'].map((prefix) => ({
    prefix,
    chars: alnumDash,
    min: 10,
  })),
  ...['sk_live_', 'rk_live_', 'sk_test_', 'rk_test_', 'whsec_'].map((prefix) => ({
    prefix,
    chars: alnum,
    min: 16,
  })),
  { prefix: 'AKIA', chars: upperDigit, min: 16 },
  { prefix: 'ASIA', chars: upperDigit, min: 16 },
  { prefix: 'AIza', chars: base64url, min: 35 },
  { prefix: 'npm_', chars: alnum, min: 36 },
  { prefix: 'sk-', chars: base64url, min: 32 },
];

/**
 * Any of the formats' prefixes, a JWT's `eyJ` or a PEM block's start: one linear pass decides whether the
 * per-format scans run at all. Made from the table, so a new format is one row of it.
 */
const TOKEN_HINT = new RegExp(
  [...TOKEN_FORMATS.map((f) => f.prefix), 'eyJ', '-----BEGIN ']
    .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('|'),
);

/** RFC 6750's token68 characters (a bearer credential), `=` padding aside. */
const token68 = (c: number): boolean => base64url(c) || c === 46 || c === 126 || c === 43 || c === 47;
/** `bearer` and the blanks after it, in any case; linear. */
const BEARER = /\bbearer[ \t]+/gi;

/**
 * A bare `Bearer <credential>` (a header value passed on its own, a curl line without `Authorization:`): the
 * credential, when it looks like one (`looksLikeCredential`: "Bearer token" and "Bearer <token>" are prose).
 * The scheme stays.
 */
function bearerCredentials(text: string, options: InlineOptions, edits: Edit[]): void {
  if (text.length < 15) return;
  BEARER.lastIndex = 0;
  for (let m = BEARER.exec(text); m !== null; m = BEARER.exec(text)) {
    const from = m.index + m[0].length;
    let j = from;
    while (j < text.length && token68(text.charCodeAt(j))) j++;
    while (j < text.length && text.charCodeAt(j) === 61) j++;
    BEARER.lastIndex = j;
    const value = text.slice(from, j);
    if (!looksLikeCredential(value)) continue;
    edits.push({ start: from, end: j });
    options.found?.(value);
  }
}

/** curl's `-u`/`--user` flag and the blanks or `=` after it, then `user:`; linear (the user is bounded). */
const USER_FLAG = /(?:^|[\s"'])(?:-u|--user)(?:[ \t]+|=)[^\s:"']{1,128}:/g;

/**
 * `curl -u user:password` (`--user`, `--user=`): the password, up to a blank or a quote, when it looks like
 * a credential (`docker run -u 1000:1000` and `-u www-data:www-data` are a user and a group).
 */
function userFlagCredentials(text: string, options: InlineOptions, edits: Edit[]): void {
  if (text.length < 12 || (!text.includes('-u') && !text.includes('--user'))) return;
  USER_FLAG.lastIndex = 0;
  for (let m = USER_FLAG.exec(text); m !== null; m = USER_FLAG.exec(text)) {
    const from = m.index + m[0].length;
    let j = from;
    while (j < text.length && j - from < 4096) {
      const c = text.charCodeAt(j);
      if (c <= 32 || c === 34 || c === 39) break;
      j++;
    }
    USER_FLAG.lastIndex = j;
    const value = text.slice(from, j);
    if (!looksLikeCredential(value)) continue;
    edits.push({ start: from, end: j });
    options.found?.(value);
  }
}

/**
 * A value worth remembering as a secret: no whitespace, 8+ chars, and a digit or a symbol (other than
 * `-_.`), or 20+ chars mixing cases. `Notepad` or `Untitled-Notepad` taught by hostile text
 * (`secret=Notepad`) are redacted where they stand but not remembered, so evidence elsewhere stays.
 */
export function looksLikeCredential(v: string): boolean {
  if (v.length < 8) return false;
  let digit = false;
  let symbol = false;
  let upper = false;
  let lower = false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c <= 32) return false;
    if (c >= 48 && c <= 57) digit = true;
    else if (c >= 65 && c <= 90) upper = true;
    else if (c >= 97 && c <= 122) lower = true;
    else if (c !== 45 && c !== 95 && c !== 46) symbol = true;
  }
  return digit || symbol || (v.length >= 20 && upper && lower);
}

/** Known credential formats: provider tokens, JWTs, PEM private keys. */
function tokens(text: string, edits: Edit[]): void {
  if (text.length < 16 || !TOKEN_HINT.test(text)) return;
  for (const f of TOKEN_FORMATS) {
    let from = 0;
    for (;;) {
      const at = text.indexOf(f.prefix, from);
      if (at === -1) break;
      from = at + f.prefix.length;
      if (at > 0 && alnumUnderscore(text.charCodeAt(at - 1))) continue;
      let j = from;
      while (j < text.length && f.chars(text.charCodeAt(j))) j++;
      if (j - from >= f.min) {
        edits.push({ start: at, end: j });
        from = j;
      }
    }
  }
  // JWT: three base64url segments, the first two JSON objects (`eyJ`).
  let from = 0;
  for (;;) {
    const at = text.indexOf('eyJ', from);
    if (at === -1) break;
    from = at + 3;
    if (at > 0 && base64url(text.charCodeAt(at - 1))) continue;
    let j = at;
    let dots = 0;
    for (;;) {
      const segStart = j;
      while (j < text.length && base64url(text.charCodeAt(j))) j++;
      if (j - segStart < (dots < 2 ? 8 : 0)) break;
      if (dots === 2 || text.charCodeAt(j) !== 46) break;
      dots++;
      j++;
    }
    if (dots === 2) {
      edits.push({ start: at, end: j });
      from = j;
    }
  }
  // PEM private keys (`-----BEGIN ... PRIVATE KEY-----`) and PGP ones (`... PRIVATE KEY BLOCK-----`) to the
  // matching END line (or the end of a cut text).
  from = 0;
  for (;;) {
    const at = text.indexOf('-----BEGIN ', from);
    if (at === -1) break;
    const head = text.indexOf('-----', at + 11);
    from = at + 11;
    const label = head === -1 ? '' : text.slice(at, head);
    if (head - at > 80 || !(label.endsWith('PRIVATE KEY') || label.endsWith('PRIVATE KEY BLOCK'))) continue;
    const endAt = text.indexOf('-----END ', head + 5);
    const close = endAt === -1 ? -1 : text.indexOf('-----', endAt + 9);
    const end = close === -1 ? text.length : close + 5;
    edits.push({ start: at, end });
    from = end;
  }
}

/**
 * `text` with inline secrets replaced by `replacement`: assignments' values, URL userinfo passwords and
 * known credential formats. `found` gets each assignment and userinfo value (for remembering).
 */
export function scrubInlineSecrets(text: string, replacement: string, options: InlineOptions): string {
  if (text.length < 6) return text;
  const edits: Edit[] = [];
  assignments(text, replacement, options, edits);
  userinfo(text, options, edits);
  tokens(text, edits);
  bearerCredentials(text, options, edits);
  userFlagCredentials(text, options, edits);
  if (edits.length === 0) return text;
  edits.sort((a, b) => a.start - b.start);
  const merged: Edit[] = [];
  for (const e of edits) {
    const prev = merged[merged.length - 1];
    if (prev && e.start <= prev.end) prev.end = Math.max(prev.end, e.end);
    else merged.push({ ...e });
  }
  return replaceSpans(text, merged, replacement);
}

const DEFAULT_SECRET_KEY = secretKeyMatcher();

/**
 * Text naming a URL (an endpoint, an error about one) fit to store or print: the userinfo password and the
 * values of secret-looking query keys (`api_key`, `token`, ...) as `***`, by the same rules as above:
 * `http://otuser:***@host/v1/traces?api_key=***`.
 */
export function withoutUrlCredentials(text: string): string {
  // The parse first (what a scan cannot read), then the scan over its result (known token formats, secret
  // keys in a fragment or a path parameter, a URL the parse refused).
  return scrubInlineSecrets(maskedUrl(text) ?? text, '***', { isSecretKey: DEFAULT_SECRET_KEY });
}

/** Query keys that carry a signature (presigned and SAS URLs: `sig`, `X-Amz-Signature`): access itself. */
const SIGNATURE_WORDS = new Set(['sig', 'signature']);

function isSecretQueryKey(key: string): boolean {
  if (DEFAULT_SECRET_KEY(key)) return true;
  return key
    .toLowerCase()
    .split(/[-_.]/)
    .some((word) => SIGNATURE_WORDS.has(word));
}

/**
 * A text that is one URL, masked by parsing it (what a scan cannot read, such as a password holding a quote
 * or a space, or a token alone as the userinfo): the password, else a lone username, and the values of
 * secret or signature query keys as `***`. Null when the text is not one URL.
 */
function maskedUrl(text: string): string | null {
  // One URL: no white space, or some only in its userinfo (a password may hold a space).
  if (!/^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#\n]*@)?\S+$/i.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.password) url.password = '***';
  else if (url.username) url.username = '***';
  let masked = url.password !== '' || url.username !== '';
  for (const key of new Set(url.searchParams.keys())) {
    if (!isSecretQueryKey(key)) continue;
    url.searchParams.set(key, '***');
    masked = true;
  }
  // Nothing to mask: the text as given (the scan below still looks for known token formats).
  return masked ? url.href : null;
}
