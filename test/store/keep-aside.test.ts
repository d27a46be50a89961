/** A corrupt log makes way for a fresh one by moving or copying aside, never by being deleted. */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keepAside } from '../../src/store/keep-aside.js';
import { tempDir } from '../support/temp.js';

const root = tempDir('mcec-aside-');
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe('keepAside', () => {
  it('moves the file aside with its bytes', () => {
    const file = path.join(root, 'a.sqlite');
    fs.writeFileSync(file, 'not a database');
    expect(keepAside(file, `${file}.corrupt-1`)).toBe(true);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.readFileSync(`${file}.corrupt-1`, 'utf8')).toBe('not a database');
  });

  // A rename from tmpfs into the temp dir crosses devices (EXDEV), as a rename of a file held open fails on Windows.
  it.skipIf(!fs.existsSync('/dev/shm'))('copies across file systems when a rename is refused', () => {
    const other = tempDir('mcec-aside-', '/dev/shm');
    try {
      const file = path.join(other, 'b.sqlite');
      fs.writeFileSync(file, 'evidence');
      const aside = path.join(root, 'b.sqlite.corrupt-2');
      expect(keepAside(file, aside)).toBe(true);
      expect(fs.readFileSync(aside, 'utf8')).toBe('evidence');
      expect(fs.existsSync(file)).toBe(false);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  it('leaves the file in place, untouched, when it can be neither moved nor copied', () => {
    const file = path.join(root, 'c.sqlite');
    fs.writeFileSync(file, 'keep me');
    // The place aside is taken by a folder with something in it: rename and copy both fail.
    const aside = path.join(root, 'c.sqlite.corrupt-3');
    fs.mkdirSync(aside);
    fs.writeFileSync(path.join(aside, 'x'), '');
    expect(keepAside(file, aside)).toBe(false);
    expect(fs.readFileSync(file, 'utf8')).toBe('keep me');
  });
});
