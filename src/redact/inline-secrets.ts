/**
 * Secrets written inline in text: `password=hunter2`, `token: abc`, `--api-key abc`,
 * `Authorization: Bearer abc`. Command lines and error details carry them without any JSON key to match.
 * Only `=`/`:` assignments and `-`/`--`/`/` flags count (prose like "the token expired" is left alone), and
 * only for the default secret words. Strings are bounded before any regex runs.
 */

/** Longer strings are not scanned for inline assignments (they are payloads, not command lines). */
const MAX_SCAN = 64 * 1024;
const QUICK = /pass|pwd|secret|token|key|auth|cred|cookie|bearer/i;
const KEY =
  'password|passwd|pwd|passphrase|secret|client[-_]?secret|token|access[-_]?token|refresh[-_]?token|' +
  'session[-_]?token|api[-_]?key|apikey|access[-_]?key|secret[-_]?key|private[-_]?key|authorization|auth|' +
  'credentials?|cookie|bearer';
const VALUE = `(?:(?:bearer|basic|token|digest)\\s+)?(?:"[^"\\n]*"|'[^'\\n]*'|[^\\s"'&;,]+)`;
// key=value / key: value (key not glued to a longer word), or a flag followed by its value.
const ASSIGNMENT = new RegExp(
  `(?<![\\w-])((?:--?|/)?(?:${KEY}))(\\s*[=:]\\s*)(${VALUE})|(?<![\\w-])(--?(?:${KEY}))(\\s+)(${VALUE})`,
  'gi',
);

/** `text` with inline secret values replaced by `replacement`; `found` gets each value (for remembering). */
export function scrubInlineSecrets(
  text: string,
  replacement: string,
  found?: (value: string) => void,
): string {
  if (text.length > MAX_SCAN || !QUICK.test(text)) return text;
  ASSIGNMENT.lastIndex = 0;
  return text.replace(
    ASSIGNMENT,
    (match: string, k1: string | undefined, s1: string, v1: string, k2: string, s2: string, v2: string) => {
      const key = k1 ?? k2;
      const sep = k1 !== undefined ? s1 : s2;
      const value = k1 !== undefined ? v1 : v2;
      if (value === replacement || value.length === 0) return match;
      const unquoted = value.replace(/^(?:(?:bearer|basic|token|digest)\s+)?(["']?)(.*)\1$/is, '$2');
      if (unquoted.length === 0) return match;
      found?.(unquoted);
      return `${key}${sep}${replacement}`;
    },
  );
}
