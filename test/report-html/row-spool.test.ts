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

  it('reads rows spooled out of order (rows with bodies, newest first) aside, between bare rows read in order', () => {
    const spool = new RowSpool(dir);
    const bare = Array.from(
      { length: 5000 },
      (_, i) => `<details id="b${i}">bare ${'é'.repeat(i % 300)}</details>`,
    );
    const bareAt = bare.map((html) => spool.append(html));
    const bodies = [4999, 4000, 12].map((seq) => ({
      seq,
      html: `<details id="f${seq}">${'body ✓ '.repeat(2000)}</details>`,
    }));
    const bodyAt = bodies.map((b) => spool.append(b.html));
    const reader = spool.reader();
    try {
      // The stream's order: bare rows ascending, each row with bodies read aside where it falls.
      for (let i = 0; i < bare.length; i++) {
        const k = bodies.findIndex((b) => b.seq === i);
        if (k >= 0)
          expect(reader.readAside(bodyAt[k]!, Buffer.byteLength(bodies[k]!.html))).toBe(bodies[k]!.html);
        else expect(reader.read(bareAt[i]!, Buffer.byteLength(bare[i]!))).toBe(bare[i]);
      }
    } finally {
      reader.close();
    }
    expect(() => reader.readAside(0, 5)).toThrow(/read after close/);
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
