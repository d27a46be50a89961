/**
 * JSON checked for image bytes within fixed bounds: a byte pass measures nesting and the number of objects and
 * arrays before anything is parsed, so a small hostile file cannot make JSON.parse build millions of values.
 */
import { leftoverImageBytes } from './scrub.js';

/** Caps on one parsed unit (a `.json` file or one line of a `.jsonl` file). */
export interface JsonCaps {
  /** Deepest nesting parsed, counted outside strings and, separately, inside any one string (nested JSON). */
  maxDepth: number;
  /** Most `{` and `[` in the unit, inside strings too (nested JSON text is parsed by the image finder). */
  maxContainers: number;
}

/** What the byte pass measured. */
export interface JsonShape {
  /** Nesting depth of the JSON itself. */
  depth: number;
  /** Deepest bracket nesting inside one string (what a nested JSON text would reach; unbalanced text counts too). */
  stringDepth: number;
  /** `{` and `[` bytes anywhere. */
  containers: number;
}

/** Measure `data[start, end)` without parsing it: one pass over the bytes, no regex, no allocation. */
export function jsonShape(data: Uint8Array, start = 0, end = data.length): JsonShape {
  let depth = 0;
  let maxDepth = 0;
  let inString = false;
  let inner = 0;
  let maxInner = 0;
  let containers = 0;
  for (let i = start; i < end; i++) {
    const c = data[i]!;
    if (inString) {
      if (c === 92 /* \ */) {
        i += 1; // the escaped char is never a quote that ends the string
      } else if (c === 34 /* " */) {
        inString = false;
      } else if (c === 91 /* [ */ || c === 123 /* { */) {
        containers += 1;
        inner += 1;
        if (inner > maxInner) maxInner = inner;
      } else if ((c === 93 /* ] */ || c === 125) /* } */ && inner > 0) {
        inner -= 1;
      }
      continue;
    }
    if (c === 34) {
      inString = true;
      inner = 0;
    } else if (c === 91 || c === 123) {
      containers += 1;
      depth += 1;
      if (depth > maxDepth) maxDepth = depth;
    } else if ((c === 93 || c === 125) && depth > 0) {
      depth -= 1;
    }
  }
  return { depth: maxDepth, stringDepth: maxInner, containers };
}

/** Why a unit must not be parsed, in words, or null when it is within the caps. */
export function overCaps(shape: JsonShape, caps: JsonCaps): string | null {
  const deepest = Math.max(shape.depth, shape.stringDepth);
  if (deepest > caps.maxDepth) {
    const where = shape.depth >= shape.stringDepth ? '' : ' (inside a string)';
    return `nested ${deepest} levels deep${where}, over the cap of ${caps.maxDepth}; not parsed`;
  }
  if (shape.containers > caps.maxContainers) {
    return `holds ${shape.containers} objects and arrays, over the cap of ${caps.maxContainers}; not parsed`;
  }
  return null;
}

/** Check a `.json` file's bytes: within the caps, valid JSON, no inline image bytes. Returns the value when parsed. */
export function checkJsonFile(data: Buffer, caps: JsonCaps, problems: string[]): { value?: unknown } {
  const why = overCaps(jsonShape(data), caps);
  if (why) {
    problems.push(why);
    return {};
  }
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch {
    problems.push('is not valid JSON');
    return {};
  }
  const n = leftoverImageBytes(value);
  if (n > 0) problems.push(`holds inline image bytes (${n} place${n === 1 ? '' : 's'})`);
  return { value };
}

/** Most problems listed per `.jsonl` file (a hostile file could have a million bad lines). */
const MAX_LINE_PROBLEMS = 5;

/** Check a `.jsonl` file's bytes line by line: each line within the caps, valid JSON, no inline image bytes. */
export function checkJsonLines(data: Buffer, caps: JsonCaps, problems: string[]): void {
  let start = 0;
  let lineNo = 0;
  let listed = 0;
  const add = (p: string) => {
    if (listed++ < MAX_LINE_PROBLEMS) problems.push(p);
  };
  while (start < data.length) {
    let end = data.indexOf(10, start);
    if (end === -1) end = data.length;
    lineNo += 1;
    const lineStart = start;
    start = end + 1;
    if (isBlank(data, lineStart, end)) continue;
    const why = overCaps(jsonShape(data, lineStart, end), caps);
    if (why) {
      add(`line ${lineNo} is ${why}`);
      continue;
    }
    try {
      if (leftoverImageBytes(JSON.parse(data.toString('utf8', lineStart, end))) > 0) {
        add(`line ${lineNo} holds inline image bytes`);
      }
    } catch {
      add(`line ${lineNo} is not valid JSON`);
    }
  }
  if (listed > MAX_LINE_PROBLEMS) problems.push(`... ${listed - MAX_LINE_PROBLEMS} more bad lines`);
}

function isBlank(data: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = data[i];
    if (c !== 32 && c !== 9 && c !== 13) return false;
  }
  return true;
}
