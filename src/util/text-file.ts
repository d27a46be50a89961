/** A text file a user wrote, as their editor saved it. */
import fs from 'node:fs';

/**
 * The text of `file`, decoded by its byte-order mark: UTF-16 LE (Windows PowerShell 5's `>` and
 * `Out-File`), UTF-16 BE, or UTF-8 with the mark (Notepad) or without it; the mark itself is not text.
 * Throws as `fs.readFileSync` does.
 */
export function readTextFile(file: string): string {
  return decodeTextBytes(fs.readFileSync(file));
}

/** A user's file's bytes as text, decoded by its byte-order mark as `readTextFile` does. */
export function decodeTextBytes(bytes: Buffer): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return bytes.toString('utf16le', 2);
  if (bytes[0] === 0xfe && bytes[1] === 0xff) {
    const swapped = Buffer.from(bytes.subarray(2, 2 + ((bytes.length - 2) & ~1)));
    return swapped.swap16().toString('utf16le');
  }
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/**
 * `readTextFile(file)` with every CRLF made LF: a template checked out or saved on Windows gives the same text
 * (the same hash, the same rendered bytes) as the one it was copied from. A lone CR is left as it is.
 */
export function readTextFileLf(file: string): string {
  return readTextFile(file).replace(/\r\n/g, '\n');
}
