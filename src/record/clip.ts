/** Bounding what the log keeps of a value that is not a per-call payload (the last good observation). */
import { jsonOrNull } from './values.js';

/** Strings longer than this are clipped to their head and their length. */
const MAX_STRING = 4096;
const HEAD = 256;

/**
 * The value (already a private copy: it is changed in place) with long strings clipped, and its JSON; when
 * that is still longer than `maxChars`, a small stand-in saying so. Iterative: any depth is fine.
 */
export function clipForLog(value: unknown, maxChars: number): { value: unknown; json: string | null } {
  // A slice would keep the whole (maybe 100 MB) parent string alive: copy the head out of it.
  const clip = (s: string) =>
    `${Buffer.from(s.slice(0, HEAD), 'utf16le').toString('utf16le')}... [${s.length} chars]`;
  if (typeof value === 'string') value = value.length > MAX_STRING ? clip(value) : value;
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    const obj = v as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      const child = obj[key];
      if (typeof child === 'string') {
        if (child.length > MAX_STRING) obj[key] = clip(child);
      } else if (child !== null && typeof child === 'object') stack.push(child);
    }
  }
  const json = jsonOrNull(value);
  if (json === null || json.length <= maxChars) return { value, json };
  const stand = {
    omitted: `the last observation is ${json.length} chars as JSON, more than the ${maxChars} kept`,
  };
  return { value: stand, json: JSON.stringify(stand) };
}
