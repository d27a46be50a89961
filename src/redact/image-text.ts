/**
 * Last line of defence: base64 image bytes that reached a string anyway (raw JSON text, an error detail, a
 * field the finder did not know). Scans with indexOf for the base64 forms of the PNG/JPEG/GIF/BMP/WebP magic
 * bytes, including the server's `\u002B` / `\/` JSON escapes, checks the head really decodes to that magic,
 * and replaces the whole base64 run. No regex runs over the (possibly 100 MB) text.
 */

import { sniffBase64Format } from '../contract/image-bytes.js';

/** Shorter runs are not worth a marker (a 1x1 PNG is already 92 chars). */
const MIN_RUN = 64;
/** Strings shorter than this cannot hold an image and are returned at once. */
export const MIN_IMAGE_TEXT = MIN_RUN;

// 'UklGR' is 'RIFF': a WebP once the sniff finds WEBP at bytes 8-11 (a WAV or AVI is left alone).
const MARKERS = ['iVBORw0KGgo', '/9j/', '\\/9j\\/', 'R0lGODlh', 'R0lGODdh', 'Qk', 'UklGR'];

function isAlphabet(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47;
}

/** Length of the JSON escape at `i` that stands for a base64 char (`\/`, `\u002B`, `\u002F`), else 0. */
function escapeAt(s: string, i: number): number {
  if (s.charCodeAt(i) !== 92) return 0;
  const n = s.charCodeAt(i + 1);
  if (n === 47) return 2;
  if (n === 117 && s.charCodeAt(i + 2) === 48 && s.charCodeAt(i + 3) === 48 && s.charCodeAt(i + 4) === 50) {
    const last = s.charCodeAt(i + 5) | 32; // lower-case
    if (last === 98 || last === 102) return 6; // \u002b (+) or \u002f (/)
  }
  return 0;
}

/** End of the base64 run starting at `start` (alphabet, escapes, then padding). */
function runEnd(s: string, start: number): number {
  let i = start;
  for (;;) {
    if (i < s.length && isAlphabet(s.charCodeAt(i))) i++;
    else {
      const e = escapeAt(s, i);
      if (e === 0) break;
      i += e;
    }
  }
  while (i < s.length && s.charCodeAt(i) === 61) i++;
  return i;
}

/** The first 24 base64 chars of a run with escapes undone, for sniffing. */
function headOf(s: string, start: number, end: number): string {
  let out = '';
  let i = start;
  while (i < end && out.length < 24) {
    const e = escapeAt(s, i);
    if (e === 0) out += s[i++];
    else {
      out += e === 2 || (s.charCodeAt(i + 5) | 32) === 102 ? '/' : '+';
      i += e;
    }
  }
  return out;
}

/** `text` with every base64 image run replaced by `[image bytes: ~N bytes]`; the same string when none. */
export function scrubImageText(text: string): string {
  if (text.length < MIN_RUN) return text;
  let result: string | undefined;
  let last = 0;
  let from = 0;
  // Next occurrence of each marker, refreshed only once passed: each marker's text is scanned once.
  const next = MARKERS.map((m) => text.indexOf(m));
  while (from < text.length) {
    let at = -1;
    for (let k = 0; k < MARKERS.length; k++) {
      if (next[k]! !== -1 && next[k]! < from) next[k] = text.indexOf(MARKERS[k]!, from);
      const i = next[k]!;
      if (i !== -1 && (at === -1 || i < at)) at = i;
    }
    if (at === -1) break;
    // A marker only starts an image at the start of a run (not in the middle of other base64).
    const prev = at > 0 ? text.charCodeAt(at - 1) : 0;
    const startsRun = at === 0 || !(isAlphabet(prev) || prev === 61);
    const end = startsRun ? runEnd(text, at) : at + 1;
    if (startsRun && end - at >= MIN_RUN && sniffBase64Format(headOf(text, at, end))) {
      const marker = `[image bytes: ~${Math.floor(((end - at) * 3) / 4)} bytes]`;
      result = `${result ?? ''}${text.slice(last, at)}${marker}`;
      last = end;
      from = end;
    } else {
      from = at + 1;
    }
  }
  return result === undefined ? text : result + text.slice(last);
}
