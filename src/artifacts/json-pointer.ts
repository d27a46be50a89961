/** JSON pointers (RFC 6901) with the contract's `#json` marker, and a cycle-safe deep copy of JSON values. */

import { JSON_MARKER, parsePointer } from '../contract/image-bytes.js';

export { JSON_MARKER };

/** Split a pointer into levels: the path in the value, then one more path per nested JSON string. */
export function pointerLevels(pointer: string): string[][] {
  const levels: string[][] = [[]];
  for (const seg of parsePointer(pointer)) {
    if (seg === JSON_MARKER) levels.push([]);
    else levels[levels.length - 1]!.push(seg);
  }
  return levels;
}

function isContainer(v: unknown): v is Record<string, unknown> | unknown[] {
  return typeof v === 'object' && v !== null;
}

/** The value at `segments` inside `root`, or undefined. */
export function getAt(root: unknown, segments: readonly string[]): unknown {
  let cur: unknown = root;
  for (const s of segments) {
    if (!isContainer(cur)) return undefined;
    if (Array.isArray(cur)) {
      const i = Number(s);
      if (!Number.isInteger(i) || i < 0 || i >= cur.length) return undefined;
      cur = cur[i];
    } else {
      if (!Object.hasOwn(cur, s)) return undefined;
      cur = cur[s];
    }
  }
  return cur;
}

/** Replace the value at `segments` (which must exist); returns the new root (changed only for `[]`). */
export function setAt(root: unknown, segments: readonly string[], value: unknown): unknown {
  if (segments.length === 0) return value;
  const parent = getAt(root, segments.slice(0, -1));
  const key = segments[segments.length - 1]!;
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (Number.isInteger(i) && i >= 0 && i < parent.length) parent[i] = value;
  } else if (isContainer(parent) && Object.hasOwn(parent, key)) {
    defineKey(parent as Record<string, unknown>, key, value);
  }
  return root;
}

function defineKey(obj: Record<string, unknown>, key: string, value: unknown): void {
  // `__proto__` from JSON.parse is an own data property; plain assignment would change the prototype.
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

function isPlain(v: object): boolean {
  if (Array.isArray(v)) return true;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** What a string at a pointer holds as JSON: its value, or why there is none (no string there, not JSON). */
export type NestedJson = { value: unknown } | 'no-string' | 'not-json';

/** Parse the JSON text held in the string at `segments` (a nested envelope, a send_command output). */
export function nestedJsonAt(root: unknown, segments: readonly string[]): NestedJson {
  const text = getAt(root, segments);
  if (typeof text !== 'string') return 'no-string';
  try {
    return { value: JSON.parse(text) };
  } catch {
    return 'not-json';
  }
}

/**
 * Deep copy of plain objects and arrays, iterative (no stack overflow on deep nesting) and cycle-safe (a cycle
 * is copied as a cycle). Strings are shared (immutable); other objects (Buffer, Date) are kept by reference.
 */
export function cloneJson<T>(value: T): T {
  if (!isContainer(value) || !isPlain(value)) return value;
  const copies = new Map<object, unknown>();
  const stack: Array<[object, Record<string, unknown> | unknown[]]> = [];
  const copyOf = (v: unknown): unknown => {
    if (!isContainer(v) || !isPlain(v)) return v;
    const known = copies.get(v);
    if (known !== undefined) return known;
    const c: Record<string, unknown> | unknown[] = Array.isArray(v) ? new Array(v.length) : {};
    copies.set(v, c);
    stack.push([v, c]);
    return c;
  };
  const root = copyOf(value);
  while (stack.length > 0) {
    const [src, dst] = stack.pop()!;
    if (Array.isArray(src)) {
      const d = dst as unknown[];
      for (let i = 0; i < src.length; i++) d[i] = copyOf(src[i]);
    } else {
      const s = src as Record<string, unknown>;
      const d = dst as Record<string, unknown>;
      for (const k of Object.keys(s)) defineKey(d, k, copyOf(s[k]));
    }
  }
  return root as T;
}
