/** Which object keys hold secrets: a default list plus the user's, matched on normalized keys. */

/** Keys whose values are never stored. Matched case-insensitively, ignoring `-` and `_`. */
export const DEFAULT_SECRET_KEYS: readonly string[] = [
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'secret',
  'token',
  'api_key',
  'apikey',
  'access_key',
  'secret_key',
  'private_key',
  'authorization',
  'proxy-authorization',
  'auth',
  'bearer',
  'credential',
  'credentials',
  'cookie',
  'set-cookie',
  'session_token',
  'access_token',
  'refresh_token',
  'id_token',
  'client_secret',
  'x-api-key',
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

/**
 * Defaults of 5+ chars also match as a suffix (`githubToken`, `dbPassword`, `x-session-cookie`); the short
 * ones (`auth`, `pwd`) only exactly, so `oauth`-like words and `cwd` stay. `maxTokens` does not end in
 * `token`, so counts survive.
 */
const SUFFIX_MIN = 5;

/** A predicate on keys, memoized (the same few keys come back on every call). */
export function secretKeyMatcher(userKeys: ReadonlyArray<string | RegExp> = []): (key: string) => boolean {
  const exact = new Set(DEFAULT_SECRET_KEYS.map(normalizeKey));
  const suffixes = [...exact].filter((k) => k.length >= SUFFIX_MIN);
  const regexes: RegExp[] = [];
  for (const k of userKeys) {
    if (typeof k === 'string') exact.add(normalizeKey(k));
    else regexes.push(new RegExp(k.source, k.flags.replace(/[gy]/g, '')));
  }
  const memo = new Map<string, boolean>();
  return (key: string): boolean => {
    const known = memo.get(key);
    if (known !== undefined) return known;
    const n = normalizeKey(key);
    let hit = exact.has(n);
    if (!hit) for (const s of suffixes) if (n.endsWith(s)) hit = true;
    if (!hit) for (const re of regexes) if (re.test(key)) hit = true;
    if (memo.size > 10_000) memo.clear(); // keys from hostile input must not grow memory without bound
    memo.set(key, hit);
    return hit;
  };
}
