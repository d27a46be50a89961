/**
 * Every database the product opens names better-sqlite3's addon by path (`addonOption()`, src/store/sqlite-addon.ts):
 * one `new Database(...)` without it brings back `bindings`' stack-trace search, about 8 ms of every command's
 * start-up, and nothing else would notice. Reads the source text only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

/** Each `new Database(` in a source text with the text of its arguments (to the matching parenthesis). */
function databaseOpenings(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/new Database\(/g)) {
    let depth = 1;
    let i = m.index + m[0].length;
    for (; i < text.length && depth > 0; i += 1) {
      if (text[i] === '(') depth += 1;
      else if (text[i] === ')') depth -= 1;
    }
    found.push(text.slice(m.index, i));
  }
  return found;
}

describe('opening a SQLite database in src/', () => {
  const files = (fs.readdirSync(SRC, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));

  it('names the addon by path at every `new Database(...)`', () => {
    const missing: string[] = [];
    let openings = 0;
    for (const file of files) {
      for (const call of databaseOpenings(fs.readFileSync(path.join(SRC, file), 'utf8'))) {
        openings += 1;
        if (!call.includes('addonOption()')) missing.push(`${file}: ${call.replace(/\s+/g, ' ')}`);
      }
    }
    expect(openings).toBeGreaterThan(5); // the scan sees the product's openings
    expect(missing).toEqual([]);
  });

  it('finds an opening without it', () => {
    expect(
      databaseOpenings(
        "const db = new Database(file, { readonly: true });\nnew Database(':memory:', addonOption());",
      ),
    ).toEqual(['new Database(file, { readonly: true })', "new Database(':memory:', addonOption())"]);
  });
});
