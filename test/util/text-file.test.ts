/** readTextFile: a user's file read as their editor saved it (Notepad, PowerShell 5), real files on disk. */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTextFile } from '../../src/util/text-file.js';
import { removeDir, tempDir } from '../support/temp.js';

const dir = tempDir('mcec-text-file-');
afterAll(() => removeDir(dir));

const TEXT = '{"rules": [{"window": {"title": "Connexion – Bitwarden ✓"}}]}\r\n';

function written(name: string, bytes: Buffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return file;
}

describe('readTextFile', () => {
  it('reads UTF-8 with and without a byte-order mark, and UTF-16 LE and BE by theirs, as the same text', () => {
    const utf16le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(TEXT, 'utf16le')]);
    const utf16be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(TEXT, 'utf16le').swap16()]);
    const files = {
      utf8: written('plain.json', Buffer.from(TEXT, 'utf8')),
      notepad: written('notepad.json', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(TEXT)])),
      powershell: written('ps5.json', utf16le),
      bigEndian: written('be.json', utf16be),
    };
    for (const [how, file] of Object.entries(files)) {
      expect(readTextFile(file), how).toBe(TEXT);
      expect(JSON.parse(readTextFile(file)), how).toEqual(JSON.parse(TEXT));
    }
  });

  it('keeps a mark that is not first, reads an empty file as empty, and throws as readFileSync for a missing one', () => {
    expect(readTextFile(written('inner.txt', Buffer.from('a\uFEFFb')))).toBe('a\uFEFFb');
    expect(readTextFile(written('empty.txt', Buffer.alloc(0)))).toBe('');
    expect(() => readTextFile(path.join(dir, 'nope.json'))).toThrow(/ENOENT/);
  });
});
