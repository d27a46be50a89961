/** The forms a leaked secret could take in a stored file, for tests that search whole logs and zips. */

/** Base64 of `secret` inside any other bytes: the middle part its own bytes decide, at each alignment. */
function base64Inside(secret: string): string[] {
  const out: string[] = [];
  for (const prefix of ['', 'a', 'ab']) {
    const b64 = Buffer.from(`${prefix}${secret}`).toString('base64');
    // Drop the groups the prefix or the unknown following bytes also decide.
    const from = prefix === '' ? 0 : 4;
    const whole = Math.floor((prefix.length + Buffer.byteLength(secret)) / 3) * 4;
    const core = b64.slice(from, whole);
    if (core.length >= 8) out.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return out;
}

/** Every form of `secret` a leak could take: plain, upper and lower case, URL- and JSON-encoded, base64. */
export function secretForms(secret: string): string[] {
  return [
    secret,
    secret.toUpperCase(),
    secret.toLowerCase(),
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
    ...base64Inside(secret),
  ];
}

/** The first form of `secret` found in `text` (case-insensitively), or undefined. */
export function leakedForm(text: string, secret: string): string | undefined {
  const lower = text.toLowerCase();
  return secretForms(secret).find((f) => lower.includes(f.toLowerCase()));
}
