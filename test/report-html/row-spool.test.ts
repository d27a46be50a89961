/** The row spool of a streamed report.html: rows written to a real scratch file and read back by offset. */
import fs from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RowSpool } from '../../src/report/html/row-spool.js';
import { removeDir, tempDir } from '../support/temp.js';

let dir: string;
beforeEach(() => {
  dir = tempDir('mcec-spool-');
});
afterEach(() => removeDir(dir));

describe('RowSpool', () => {
  it('gives back every row by offset, across the staging buffer, the read window and rows larger than both', () => {
    const spool = new RowSpool(dir);
    const rows: Array<{ html: string; at: number }> = [];
    for (let i = 0; i < 3000; i++) {
      // Multi-byte text, so offsets are bytes, not characters; every 997th row is 1.5 MB.
      const html =
        i % 997 === 5
          ? `<details id="c${i}">${'é'.repeat(750_000)}</details>`
          : `<details id="c${i}">#${i} ✓ ${'x'.repeat(i % 400)}</details>`;
      rows.push({ html, at: spool.append(html) });
    }
    const reader = spool.reader();
    try {
      for (const { html, at } of rows) expect(reader.read(at, Buffer.byteLength(html))).toBe(html);
      // Asked for again out of order (the window moves back): still right.
      expect(reader.read(rows[10]!.at, Buffer.byteLength(rows[10]!.html))).toBe(rows[10]!.html);
    } finally {
      reader.close();
    }
    const file = fs.readdirSync(dir);
    expect(file).toHaveLength(1);
    expect(fs.statSync(`${dir}/${file[0]}`).size).toBe(
      rows.reduce((n, r) => n + Buffer.byteLength(r.html), 0),
    );
  });

  it('refuses to append once read, and says so when asked for bytes that are not there', () => {
    const spool = new RowSpool(dir);
    const at = spool.append('<details>one</details>');
    const reader = spool.reader();
    expect(() => spool.append('<details>two</details>')).toThrow(/append after finish/);
    expect(() => reader.read(at + 5, 100)).toThrow(/100 bytes at 5 are not there/);
    reader.close();
    expect(() => reader.read(at, 5)).toThrow(/read after close/);
  });
});
