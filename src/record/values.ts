/**
 * Small total helpers for values the recorder stores: JSON that never throws, dates and ids it can trust,
 * image bytes out of values that never make artifacts.
 */
import { findImageBytes, setAtPointer } from '../contract/image-bytes.js';

/** What stands in a stored value for image bytes that could not become an artifact (args, events). */
export const IMAGE_BYTES_OMITTED = '[image bytes omitted]';

/** A (redacted, private) copy's image bytes replaced in place by IMAGE_BYTES_OMITTED. */
export function withoutImageBytes(value: unknown): unknown {
  let out = value;
  for (const loc of findImageBytes(value)) {
    const set = setAtPointer(out, loc.path, IMAGE_BYTES_OMITTED);
    out = set.ok ? set.root : IMAGE_BYTES_OMITTED;
  }
  return out;
}

/** JSON text of a value, or null; never throws (BigInt and cycles become a marker). */
export function jsonOrNull(v: unknown): string | null {
  if (v === undefined) return null;
  try {
    return JSON.stringify(v) ?? null;
  } catch (err) {
    return JSON.stringify(`[unserializable: ${(err as Error).name}]`);
  }
}

/** The date when it is a valid Date, else undefined (a proxy's meta is not trusted blindly). */
export function validDate(d: unknown): Date | undefined {
  return d instanceof Date && !Number.isNaN(d.getTime()) ? d : undefined;
}

/** An id as stored when it is not path-safe: JSON-escaped, clipped to 200 characters. */
export function escapeId(id: string): string {
  return JSON.stringify(id).slice(1, -1).slice(0, 200);
}
