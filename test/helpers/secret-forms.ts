/** The forms a leaked secret could take in a stored file, for tests that search whole logs and zips. */
import { base64Cores } from '../../src/redact/index.js';

/** Every form of `secret` a leak could take: plain, upper and lower case, URL-encoded, base64 (any alignment). */
export function secretForms(secret: string): string[] {
  return [
    secret,
    secret.toUpperCase(),
    secret.toLowerCase(),
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
    Buffer.from(secret).toString('base64').replace(/=+$/, ''),
    ...base64Cores(secret),
    ...base64Cores(`u:${secret}`),
  ];
}

/** The first form of `secret` found in `text` (case-insensitively), or undefined. */
export function leakedForm(text: string, secret: string): string | undefined {
  const lower = text.toLowerCase();
  return secretForms(secret).find((f) => lower.includes(f.toLowerCase()));
}
