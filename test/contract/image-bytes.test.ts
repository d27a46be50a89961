import { describe, expect, it } from 'vitest';
import {
  decodeBase64Strict,
  estimateDecodedLength,
  findImageBytes,
  formatPointer,
  getAtPointer,
  parseImageDataUri,
  parsePointer,
  setAtPointer,
  sniffImageFormat,
} from '../../src/contract/index.js';
import { blueJpeg, greenGif, redPng, tinyBmp } from '../support/images.js';
import { mcecStringify } from './fixtures.js';

// Top-level await: some it.each tables are built from these at collection time.
const png = await redPng();
const jpeg = await blueJpeg();
const gif = await greenGif();
const bmp = tinyBmp();
const b64 = (b: Buffer) => b.toString('base64');

describe('findImageBytes: where bytes hide', () => {
  it('finds a capture result base64 field with exact size and format', () => {
    const env = {
      ok: true,
      result: { width: 8, height: 8, encoding: 'png', bytes: png.length, base64: b64(png) },
    };
    expect(findImageBytes(env)).toEqual([
      { path: '/result/base64', form: 'base64-field', decodedBytes: png.length, format: 'png' },
    ]);
  });

  it('finds MCP image block data with its mimeType', () => {
    const ctr = {
      content: [
        { type: 'image', data: b64(jpeg), mimeType: 'image/jpeg' },
        { type: 'text', text: '{"ok":true}' },
      ],
    };
    expect(findImageBytes(ctr)).toEqual([
      {
        path: '/content/0/data',
        form: 'image-block',
        decodedBytes: jpeg.length,
        format: 'jpeg',
        mimeType: 'image/jpeg',
      },
    ]);
  });

  it('finds data: URIs, case-insensitively', () => {
    const v = { a: [`data:image/png;base64,${b64(png)}`, `DATA:IMAGE/GIF;BASE64,${b64(gif)}`] };
    expect(findImageBytes(v)).toEqual([
      { path: '/a/0', form: 'data-uri', decodedBytes: png.length, format: 'png', mimeType: 'image/png' },
      { path: '/a/1', form: 'data-uri', decodedBytes: gif.length, format: 'gif', mimeType: 'image/gif' },
    ]);
  });

  it.each([
    ['png', () => png],
    ['jpeg', () => jpeg],
    ['gif', () => gif],
    ['bmp', () => bmp],
  ] as const)('sniffs bare %s base64 under any key', (format, bytes) => {
    const v = { result: { screenshot: b64(bytes()) } };
    expect(findImageBytes(v)).toEqual([
      { path: '/result/screenshot', form: 'sniffed', decodedBytes: bytes().length, format },
    ]);
  });

  it('finds bytes in a legacy CommandResult inside send_command output (JSON in a string)', () => {
    const inner = { success: true, command: 'capture', error: null, data: { base64: b64(png), width: 8 } };
    const env = { ok: true, result: { output: JSON.stringify(inner) } };
    expect(findImageBytes(env)).toEqual([
      {
        path: '/result/output/#json/data/base64',
        form: 'base64-field',
        decodedBytes: png.length,
        format: 'png',
      },
    ]);
  });

  it('finds bytes through the server escaping, three strings deep', () => {
    const inner = { success: true, command: 'capture', data: { shot: b64(png) } };
    const env = { ok: true, result: { output: mcecStringify(inner) } };
    const ctr = { content: [{ type: 'text', text: mcecStringify(env) }], isError: false };
    const rpcLine = JSON.stringify({
      ts: 'x',
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, result: ctr }),
    });
    const locs = findImageBytes({ line: rpcLine });
    expect(locs).toEqual([
      {
        path: '/line/#json/payload/#json/result/content/0/text/#json/result/output/#json/data/shot',
        form: 'sniffed',
        decodedBytes: png.length,
        format: 'png',
      },
    ]);
    expect(getAtPointer({ line: rpcLine }, locs[0]!.path)).toBe(b64(png));
  });

  it('escapes ~ and / in keys (RFC 6901)', () => {
    const v = { 'a/b': { 'c~d': b64(png) } };
    const [loc] = findImageBytes(v);
    expect(loc?.path).toBe('/a~1b/c~0d');
    expect(getAtPointer(v, loc!.path)).toBe(b64(png));
  });

  it('reports base64 fields even when they are not a known image format', () => {
    const v = { base64: Buffer.from('just some bytes, not an image').toString('base64') };
    expect(findImageBytes(v)).toEqual([{ path: '/base64', form: 'base64-field', decodedBytes: 29 }]);
  });

  it('reports base64 fields holding a data: URI with the declared mimeType', () => {
    expect(findImageBytes({ base64: `data:image/png;base64,${b64(png)}` })).toEqual([
      {
        path: '/base64',
        form: 'base64-field',
        decodedBytes: png.length,
        format: 'png',
        mimeType: 'image/png',
      },
    ]);
  });

  it('counts line-wrapped base64 exactly', () => {
    const wrapped = b64(png).replace(/(.{76})/g, '$1\n');
    expect(findImageBytes({ base64: wrapped })[0]?.decodedBytes).toBe(png.length);
  });

  it.each<[string, unknown]>([
    ['a redaction marker in a base64 field', { base64: '<redacted base64>' }],
    [
      'a redaction marker in an image block',
      { type: 'image', data: '<redacted base64>', mimeType: 'image/png' },
    ],
    ['an empty base64 field', { base64: '' }],
    ['ordinary text', { detail: 'Selector matched 3 windows; refine with processName or className.' }],
    ['a word that starts like JPEG base64', { note: '/9j/ is how JPEG base64 starts, as docs say' }],
    ['short base64 of a PNG header', { s: 'iVBORw0KGgo=' }],
    ['non-image base64', { s: Buffer.from('hello world, this is plain text').toString('base64') }],
    [
      'a data: URI that is not an image',
      { s: `data:text/plain;base64,${Buffer.from('hello there friend').toString('base64')}` },
    ],
    [
      'a data: image URI without base64',
      { s: 'data:image/svg+xml;utf8,<svg xmlns="http://www.w3.org/2000/svg"/>' },
    ],
    ['JSON-looking text that is not JSON', { s: '{ this is not json at all, but looks like it }' }],
    ['primitives', [1, true, null, 'x']],
    ['BM followed by junk', { s: Buffer.from('BM this is not a bitmap header at all').toString('base64') }],
  ])('ignores %s', (_n, v) => {
    expect(findImageBytes(v)).toEqual([]);
  });

  it('lists every location in document order', () => {
    const v = {
      content: [
        { type: 'image', data: b64(png), mimeType: 'image/png' },
        {
          type: 'text',
          text: JSON.stringify({
            ok: false,
            error: {
              code: 'frame-all-black',
              category: 'capture-blank',
              detail: '',
              partialResult: { base64: b64(png) },
            },
          }),
        },
      ],
    };
    expect(findImageBytes(v).map((l) => l.path)).toEqual([
      '/content/0/data',
      '/content/1/text/#json/error/partialResult/base64',
    ]);
  });

  it('keeps document order when declared fields follow nested ones', () => {
    const v = { a: { base64: b64(png) }, base64: b64(gif), z: [b64(jpeg)] };
    expect(findImageBytes(v).map((l) => [l.path, l.format])).toEqual([
      ['/a/base64', 'png'],
      ['/base64', 'gif'],
      ['/z/0', 'jpeg'],
    ]);
  });

  it('does not loop on cyclic objects', () => {
    const a: Record<string, unknown> = { base64: b64(png) };
    a.self = a;
    a.list = [a, a];
    expect(findImageBytes(a)).toHaveLength(1);
  });
});

describe('decodeBase64Strict', () => {
  it('decodes valid base64 to the same bytes', () => {
    const out = decodeBase64Strict(b64(png));
    expect(Buffer.isBuffer(out) && out.equals(png)).toBe(true);
  });

  it.each([
    ['missing padding', b64(png).replace(/=+$/, '')],
    ['line breaks', b64(png).replace(/(.{60})/g, '$1\r\n')],
    ['trailing newline', `${b64(png)}\n`],
  ])('accepts %s', (_n, s) => {
    const out = decodeBase64Strict(s);
    expect(Buffer.isBuffer(out) && out.equals(png)).toBe(true);
  });

  it('accepts the empty string as zero bytes', () => {
    expect(decodeBase64Strict('')).toEqual(Buffer.alloc(0));
  });

  it.each([
    ['a char outside the alphabet', 'AAAA*AAA'],
    ['a space', 'AAAA AAA'],
    ['url-safe chars', 'AA-_AAAA'],
    ['an impossible length', 'AAAAA'],
    ['too much padding', 'AA==='],
    ['padding in the middle', 'AA==AAAA'],
    ['misplaced padding', 'AAA=='],
    ['escaped plus left in', 'AA\\u002BA'],
  ])('rejects %s', (_n, s) => {
    const out = decodeBase64Strict(s);
    expect(Buffer.isBuffer(out)).toBe(false);
    expect((out as { error: string }).error).toMatch(/./);
  });
});

describe('sniffImageFormat and helpers', () => {
  it('recognises real images and nothing else', () => {
    expect(sniffImageFormat(png)).toBe('png');
    expect(sniffImageFormat(jpeg)).toBe('jpeg');
    expect(sniffImageFormat(gif)).toBe('gif');
    expect(sniffImageFormat(bmp)).toBe('bmp');
    expect(sniffImageFormat(Buffer.from('BM not a bitmap header'))).toBeUndefined();
    expect(sniffImageFormat(Buffer.from([0x89, 0x50]))).toBeUndefined();
    expect(sniffImageFormat(Buffer.alloc(0))).toBeUndefined();
  });

  it('parses data: URIs', () => {
    expect(parseImageDataUri('data:image/jpeg;name=x;base64,AAAA')).toEqual({
      mimeType: 'image/jpeg',
      start: 30,
    });
    expect(parseImageDataUri('data:image/png,AAAA')).toBeUndefined();
    expect(parseImageDataUri('image/png;base64,AAAA')).toBeUndefined();
  });

  it('estimates decoded length from length and padding', () => {
    expect(estimateDecodedLength('AAAA')).toBe(3);
    expect(estimateDecodedLength('AAA=')).toBe(2);
    expect(estimateDecodedLength('AA==')).toBe(1);
    expect(estimateDecodedLength('AA')).toBe(1);
  });

  it('round-trips pointers', () => {
    expect(parsePointer('')).toEqual([]);
    expect(parsePointer('/a~1b/c~0d/#json/0')).toEqual(['a/b', 'c~d', '#json', '0']);
    expect(formatPointer(['a/b', 'c~d', '#json', 0])).toBe('/a~1b/c~0d/#json/0');
  });
});

describe('getAtPointer / setAtPointer', () => {
  it('reads through arrays, objects and #json strings', () => {
    const v = { a: [{ b: JSON.stringify({ c: [1, { d: 'x' }] }) }] };
    expect(getAtPointer(v, '')).toBe(v);
    expect(getAtPointer(v, '/a/0/b/#json/c/1/d')).toBe('x');
    expect(getAtPointer(v, '/a/1')).toBeUndefined();
    expect(getAtPointer(v, '/a/01')).toBeUndefined();
    expect(getAtPointer(v, '/a/0/b/c')).toBeUndefined();
    expect(getAtPointer(v, '/a/0/zz/#json')).toBeUndefined();
    expect(getAtPointer({ '#json': 1 }, '/#json')).toBe(1);
    expect(getAtPointer({}, '/toString')).toBeUndefined();
  });

  it('replaces bytes in place, re-serializing nested JSON strings', () => {
    const inner = { success: true, command: 'capture', data: { base64: b64(png), width: 8 } };
    const env = { ok: true, result: { output: JSON.stringify(inner), other: 1 } };
    const ctr = { content: [{ type: 'text', text: mcecStringify(env) }] };
    const [loc] = findImageBytes(ctr);
    const res = setAtPointer(ctr, loc!.path, '<redacted base64>');
    expect(res).toEqual({ ok: true, root: ctr });
    expect(findImageBytes(ctr)).toEqual([]);
    const back = JSON.parse(ctr.content[0]!.text) as { result: { output: string; other: number } };
    expect(back.result.other).toBe(1);
    expect(JSON.parse(back.result.output)).toEqual({
      ...inner,
      data: { base64: '<redacted base64>', width: 8 },
    });
  });

  it('replaces every location found, leaving no bytes', () => {
    const v = {
      content: [
        { type: 'image', data: b64(png), mimeType: 'image/png' },
        {
          type: 'text',
          text: JSON.stringify({
            ok: true,
            result: { base64: b64(png), uri: `data:image/png;base64,${b64(png)}` },
          }),
        },
      ],
    };
    for (const loc of findImageBytes(v)) expect(setAtPointer(v, loc.path, '<redacted>').ok).toBe(true);
    expect(findImageBytes(v)).toEqual([]);
    expect(JSON.stringify(v)).not.toContain(b64(png).slice(0, 16));
  });

  it('returns a new root when the root itself is a JSON string', () => {
    const res = setAtPointer(JSON.stringify({ a: 1 }), '/#json/a', 2);
    expect(res).toEqual({ ok: true, root: '{"a":2}' });
    expect(setAtPointer({ a: 1 }, '', 5)).toEqual({ ok: true, root: 5 });
  });

  it.each([
    ['a missing parent', { a: {} }, '/b/c'],
    ['an array index past the end', { a: [1] }, '/a/5'],
    ['a non-index segment on an array', { a: [1] }, '/a/x'],
    ['a #json marker on non-JSON text', { a: 'not json' }, '/a/#json/b'],
    ['a primitive container', { a: 1 }, '/a/b'],
  ])('fails softly on %s', (_n, root, pointer) => {
    const before = JSON.stringify(root);
    const res = setAtPointer(root, pointer, 'x');
    expect(res.ok).toBe(false);
    expect(JSON.stringify(root)).toBe(before);
  });
});
