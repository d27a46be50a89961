/** Shape checks on parsed JSON, shared by every module (a leaf: it imports nothing of the project). */

/** True for a plain object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
