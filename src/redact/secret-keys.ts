/**
 * Which object keys hold secrets: a default list plus the user's. The defaults cover the key names Sentry's
 * server-side data scrubber and its SDKs' deny lists treat as sensitive, and the credential kinds GitHub
 * secret scanning looks for (passwords, tokens, API and private keys, connection strings, session cookies).
 */

/**
 * Words that make a key secret wherever they stand in it (`password_confirmation`, `passwordValue`,
 * `dbPass`, `otp`). A key is split into words at `-`, `_`, `.`, spaces and camelCase humps.
 */
export const SECRET_WORDS: readonly string[] = [
  'password',
  'passwd',
  'pass',
  'pwd',
  'passphrase',
  'passcode',
  'secret',
  'secrets',
  'token',
  'jwt',
  'otp',
  'totp',
  'hotp',
  'auth',
  'authorization',
  'bearer',
  'credential',
  'credentials',
  'creds',
  'cookie',
  'cookies',
  'apikey',
  'privatekey',
  'sessionkey',
  'csrf',
  'xsrf',
  'csrftoken',
  'xsrftoken',
  'phpsessid',
  'cvv',
  'cvc',
];

/** Words that make a key secret when followed by `key`/`keys` (`privateKeyPem`, `x-api-key`, `sessionKey`). */
export const KEY_QUALIFIERS: readonly string[] = [
  'api',
  'access',
  'secret',
  'private',
  'session',
  'signing',
  'encryption',
  'master',
  'client',
  'auth',
  'license',
  'ssh',
  'gpg',
  'pgp',
  'account',
  'storage',
  'subscription',
  'shared',
];

/**
 * Fragments that make an all-lower-case key secret wherever they stand in it (`userpassword`,
 * `stripetoken`, `mysql_pwd`), as Sentry matches; short words (`auth`, `pass`) only as words, so `author`,
 * `passed`, `maxTokens` and `cwd` stay.
 */
export const SECRET_FRAGMENTS: readonly string[] = [
  'password',
  'passwd',
  'passphrase',
  'apikey',
  'privatekey',
  'accesstoken',
  'refreshtoken',
  'authtoken',
  'idtoken',
  'githubtoken',
  'stripetoken',
  'mysqlpwd',
  'clientsecret',
  'secretkey',
  'sessiontoken',
  'sessionkey',
  'connectionstring',
  'cardnumber',
  'credential',
];

/** Suffixes of a normalized key (`githubtoken`, `xsessioncookie`, `appsecret`). */
const SECRET_SUFFIXES = ['secret', 'token', 'cookie', 'authorization', 'bearer'];

/** The default list as documented: every word, qualifier pair and fragment above. */
export const DEFAULT_SECRET_KEYS: readonly string[] = [
  ...SECRET_WORDS,
  ...KEY_QUALIFIERS.map((q) => `${q}_key`),
  'connection_string',
  'card_number',
  'set-cookie',
  'x-api-key',
  'proxy-authorization',
  'access_token',
  'refresh_token',
  'id_token',
  'client_secret',
  'mysql_pwd',
  'github_token',
  'stripetoken',
];

/** Lower case without `-` and `_`: `X-Api-Key`, `x_api_key` and `xApiKey` are one key. */
export function normalizeKey(key: string): string {
  let out = '';
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c === 45 || c === 95) continue;
    out += c >= 65 && c <= 90 ? String.fromCharCode(c + 32) : key[i];
  }
  return out;
}

function isUpper(c: number): boolean {
  return c >= 65 && c <= 90;
}
function isLower(c: number): boolean {
  return c >= 97 && c <= 122;
}
function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** A key's words, lower case: `privateKeyPEM` -> private, key, pem; `X-CSRF-Token` -> x, csrf, token. */
export function keyWords(key: string): string[] {
  const words: string[] = [];
  let cur = '';
  for (let i = 0; i < key.length && i < 256; i++) {
    const c = key.charCodeAt(i);
    if (!(isUpper(c) || isLower(c) || isDigit(c))) {
      if (cur) words.push(cur);
      cur = '';
      continue;
    }
    const prev = i > 0 ? key.charCodeAt(i - 1) : 0;
    const next = i + 1 < key.length ? key.charCodeAt(i + 1) : 0;
    // A hump: lower->Upper, or the last capital of a run before a lower (`XMLHttp` -> XML, Http).
    if (cur && isUpper(c) && (isLower(prev) || isDigit(prev) || (isUpper(prev) && isLower(next)))) {
      words.push(cur);
      cur = '';
    }
    cur += String.fromCharCode(isUpper(c) ? c + 32 : c);
  }
  if (cur) words.push(cur);
  return words;
}

const WORDS = new Set(SECRET_WORDS);
const QUALIFIERS = new Set(KEY_QUALIFIERS);
/** `apikey`, `signingkey`, ...: the qualifier pairs written as one lower-case word. */
const QUALIFIER_KEYS = KEY_QUALIFIERS.map((q) => `${q}key`);

/** True when the default rules call `key` secret. */
export function isDefaultSecretKey(key: string): boolean {
  const words = keyWords(key);
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (WORDS.has(w)) return true;
    if ((w === 'key' || w === 'keys') && i > 0 && QUALIFIERS.has(words[i - 1]!)) return true;
    if (w === 'number' && i > 0 && words[i - 1] === 'card') return true;
    if (w === 'string' && i > 0 && words[i - 1] === 'connection') return true;
  }
  const n = normalizeKey(key);
  for (const f of SECRET_FRAGMENTS) if (n.includes(f)) return true;
  for (const q of QUALIFIER_KEYS) if (n.includes(q)) return true;
  for (const s of SECRET_SUFFIXES) if (n.endsWith(s)) return true;
  return false;
}

/**
 * Text that may assign a default secret key holds one of these (a cheap test before the assignment scan):
 * every word, fragment, qualifier pair and suffix above contains one (test/redact/redactor.test.ts).
 */
const DEFAULT_KEY_HINT =
  /pass|pwd|secret|token|key|auth|cred|cookie|bearer|jwt|otp|csrf|xsrf|sess|cvv|cvc|card|conn/i;

/**
 * A cheap test of text before the assignment scan: a hint of a default key or of one of the user's (each
 * word of a key given as a string; a key given as a regex cannot be hinted, so then every text is scanned).
 */
export function secretKeyHint(userKeys: ReadonlyArray<string | RegExp> = []): (text: string) => boolean {
  if (userKeys.some((k) => typeof k !== 'string')) return () => true;
  const words = new Set<string>();
  for (const k of userKeys as readonly string[]) for (const w of keyWords(k)) words.add(w);
  if (words.size === 0) return (text) => DEFAULT_KEY_HINT.test(text);
  const user = new RegExp([...words].join('|'), 'i'); // keyWords gives letters and digits only
  return (text) => DEFAULT_KEY_HINT.test(text) || user.test(text);
}

/** A predicate on keys, memoized (the same few keys come back on every call). */
export function secretKeyMatcher(userKeys: ReadonlyArray<string | RegExp> = []): (key: string) => boolean {
  const exact = new Set<string>();
  const regexes: RegExp[] = [];
  for (const k of userKeys) {
    if (typeof k === 'string') exact.add(normalizeKey(k));
    else regexes.push(new RegExp(k.source, k.flags.replace(/[gy]/g, '')));
  }
  const memo = new Map<string, boolean>();
  return (key: string): boolean => {
    const known = memo.get(key);
    if (known !== undefined) return known;
    let hit = isDefaultSecretKey(key) || exact.has(normalizeKey(key));
    if (!hit) for (const re of regexes) if (re.test(key.slice(0, 1024))) hit = true;
    if (memo.size > 10_000) memo.clear(); // keys from hostile input must not grow memory without bound
    memo.set(key, hit);
    return hit;
  };
}
