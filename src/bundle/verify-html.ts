/**
 * report.html as verifyBundle checks it: its Content-Security-Policy comes first and allows only the page's own
 * scripts, every `<script>` is one of those, and the only image bytes are small WebP thumbnails.
 */
import { createHash } from 'node:crypto';
import { MAX_ASPECT, MAX_THUMBNAIL_WIDTH } from '../report/html/thumbnails.js';
import { Base64RunScanner } from './scrub.js';

/** Most problems listed for one page. */
const MAX_PAGE_PROBLEMS = 10;
/** The CSP meta must be found within this many characters of the top. */
const HEAD_PREFIX_CHARS = 4096;
/** A data: URI payload shorter than this is text that mentions one, not an image. */
const MIN_DATA_PAYLOAD = 16;

/**
 * The page up to its CSP, as the built-in template writes it: the doctype, `<html>`, `<head>`, the charset and
 * then the policy, nothing else before it (a policy after content or inside a comment protects nothing).
 */
const CSP_AT_TOP =
  /^\s*(?:<!doctype html>\s*)?<html\b[^<>]*>\s*<head>\s*(?:<meta charset="?utf-8"?\s*\/?>\s*)?<meta http-equiv="?content-security-policy"? content="([^"<>]*)"\s*\/?>/i;

/** Source keywords that let scripts run beyond the hashed ones. */
const LOOSE_SOURCES = new Set([
  "'unsafe-inline'",
  "'unsafe-eval'",
  "'unsafe-hashes'",
  "'strict-dynamic'",
  "'wasm-unsafe-eval'",
  "'report-sample'",
]);

/** Problems with a report.html (each starting with what is wrong); `ownScripts` are the CSP sources allowed. */
export function checkReportHtml(data: Buffer, ownScripts: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const add = (p: string) => {
    if (problems.length < MAX_PAGE_PROBLEMS) problems.push(p);
  };
  let html: string;
  try {
    html = new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    // Raw image bytes are not UTF-8: say so, and still look at everything else.
    add('is not valid UTF-8');
    html = data.toString('utf8');
  }
  checkCsp(html, ownScripts, add);
  checkScripts(html, ownScripts, add);
  checkImages(data, html, add);
  return problems;
}

function checkCsp(html: string, own: ReadonlySet<string>, add: (p: string) => void): void {
  const m = CSP_AT_TOP.exec(html.slice(0, HEAD_PREFIX_CHARS));
  if (!m) {
    add('does not begin with its Content-Security-Policy (without one any script in the page would run)');
    return;
  }
  const directives = new Map<string, string[]>();
  for (const part of decodeEntities(m[1]!).split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name && !directives.has(name.toLowerCase())) directives.set(name.toLowerCase(), sources);
  }
  const defaults = directives.get('default-src');
  if (defaults?.join(' ') !== "'none'") add("its CSP does not say default-src 'none'");
  for (const [name, sources] of directives) {
    for (const s of sources) {
      if (LOOSE_SOURCES.has(s.toLowerCase())) add(`its CSP allows ${s} in ${name}`);
      else if (name.startsWith('script-src') && s !== "'none'" && !own.has(s)) {
        add(`its CSP allows a script that is not the page's own (${name} ${s.slice(0, 80)})`);
      }
    }
  }
}

function checkScripts(html: string, own: ReadonlySet<string>, add: (p: string) => void): void {
  const open = /<script/gi;
  const close = /<\/script/gi;
  for (let m = open.exec(html); m !== null; m = open.exec(html)) {
    const bodyStart = m.index + m[0].length + 1;
    if (html[bodyStart - 1] !== '>') {
      add('holds a <script> with attributes (the page has only its own inline scripts)');
      continue;
    }
    close.lastIndex = bodyStart;
    const end = close.exec(html);
    const body = html.slice(bodyStart, end ? end.index : html.length);
    const source = `'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`;
    if (!own.has(source)) add(`holds a script that is not the page's own (${source})`);
    if (!end) break;
    open.lastIndex = end.index;
  }
}

function checkImages(data: Buffer, html: string, add: (p: string) => void): void {
  // Base64 image runs and raw signatures, as written and with character references decoded.
  const decoded = decodeEntities(html);
  for (const text of decoded === html ? [data] : [data, Buffer.from(decoded, 'utf8')]) {
    const scanner = new Base64RunScanner({ text: true });
    scanner.feed(text);
    if (scanner.finding) {
      add(scanner.finding);
      break;
    }
  }
  const uri = /data:image\/([a-z0-9.+-]{1,64})([^,<>"'\s]{0,200}),/gi;
  let thumbs = 0;
  for (let m = uri.exec(decoded); m !== null; m = uri.exec(decoded)) {
    const start = m.index + m[0].length;
    let end = start;
    while (end < decoded.length && isPayloadChar(decoded.charCodeAt(end))) end++;
    if (end - start < MIN_DATA_PAYLOAD) continue;
    const type = m[1]!.toLowerCase();
    const base64 = m[2]!.toLowerCase().split(';').includes('base64');
    if (type !== 'webp' || !base64) {
      add(`holds a data:image/${type.slice(0, 20)} URI (only WebP thumbnails belong in the page)`);
      continue;
    }
    thumbs++;
    const why = thumbnailProblem(Buffer.from(decoded.slice(start, end), 'base64'));
    if (why) add(`thumbnail ${thumbs}: ${why}`);
    uri.lastIndex = end;
  }
}

/** What is wrong with an embedded WebP as a thumbnail, or null: a whole WebP, small, holding no other image. */
export function thumbnailProblem(webp: Buffer): string | null {
  if (
    webp.length < 30 ||
    webp.toString('latin1', 0, 4) !== 'RIFF' ||
    webp.toString('latin1', 8, 12) !== 'WEBP'
  )
    return 'not a WebP image';
  if (webp.readUInt32LE(4) + 8 !== webp.length) return 'a WebP whose RIFF size does not match its bytes';
  const size = webpSize(webp);
  if (!size) return 'a WebP whose size cannot be read';
  if (size.width > MAX_THUMBNAIL_WIDTH || size.height > MAX_THUMBNAIL_WIDTH * MAX_ASPECT) {
    return `${size.width} x ${size.height} px, larger than a thumbnail (${MAX_THUMBNAIL_WIDTH} px wide at most)`;
  }
  for (const magic of ['89504e470d0a1a0a', '474946383761', '474946383961']) {
    if (webp.indexOf(Buffer.from(magic, 'hex')) !== -1) return 'holds PNG or GIF bytes';
  }
  return null;
}

/** Canvas size from the first chunk (VP8, VP8L or VP8X), per the WebP container spec. */
function webpSize(b: Buffer): { width: number; height: number } | null {
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8 ' && b.length >= 30 && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a) {
    return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L' && b.length >= 25 && b[20] === 0x2f) {
    const bits = b.readUInt32LE(21);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X' && b.length >= 30) {
    return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  }
  return null;
}

function isPayloadChar(c: number): boolean {
  return (
    (c >= 65 && c <= 90) ||
    (c >= 97 && c <= 122) ||
    (c >= 48 && c <= 57) ||
    c === 43 ||
    c === 47 ||
    c === 61 ||
    c === 37
  );
}

const NAMED: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  colon: ':',
  sol: '/',
  semi: ';',
  comma: ',',
  period: '.',
  plus: '+',
  equals: '=',
  num: '#',
  percnt: '%',
  newline: '\n',
  tab: '\t',
};

/**
 * Numeric and common named character references decoded (as a browser does in attributes and text), so a
 * data: URI or base64 run written as `&#100;ata:` or `&#105;VBOR` is still seen. Returns `html` when it has none.
 */
function decodeEntities(html: string): string {
  if (html.indexOf('&') === -1) return html;
  return html.replace(
    /&(?:#([0-9]{1,7})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]{2,8}));?/g,
    (all, dec, hex, name) => {
      if (name !== undefined) return NAMED[name.toLowerCase()] ?? all;
      const code = dec !== undefined ? Number(dec) : Number.parseInt(hex, 16);
      return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff)
        ? String.fromCodePoint(code)
        : all;
    },
  );
}
