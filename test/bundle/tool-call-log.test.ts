import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Base64RunScanner, longestBase64Run, scrubImageBytes } from '../../src/bundle/scrub.js';
import {
  buildToolCallLog,
  hasBase64Run,
  ToolCallLogFile,
  TRUNCATION_LINE,
} from '../../src/bundle/tool-call-log.js';
import type { CallRow, EventRow } from '../../src/store/schema.js';
import { parseByteSize, parseDuration } from '../../src/util/units.js';
import { bundleValidators, inlineImages } from './helpers.js';

const line = bundleValidators().line;
// A 1x1 PNG: its base64 is what an inline capture looks like.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

function row(seq: number, over: Partial<CallRow> = {}): CallRow {
  const t = new Date(Date.UTC(2026, 11, 2, 10, 15, seq)).toISOString();
  return {
    seq,
    tool: 'find',
    args: JSON.stringify({ window: 'Save As', value: 'Save' }),
    rpc_id: String(seq),
    transport: 'stdio',
    started_at: t,
    ended_at: t,
    duration_ms: 5,
    status: 'ok',
    ok: 1,
    error_code: null,
    error_category: null,
    error_detail: null,
    output_kind: 'envelope',
    envelope: JSON.stringify({ ok: true, result: { found: true } }),
    response: null,
    violations: null,
    payload_dropped: 0,
    ...over,
  };
}

function event(
  id: number,
  kind: string,
  at: string,
  detail: unknown,
  callSeq: number | null = null,
): EventRow {
  return { id, kind, at, call_seq: callSeq, detail: JSON.stringify(detail) };
}

function source(rows: CallRow[], events: EventRow[] = []) {
  return {
    calls: () => rows,
    events: (kind?: string) => events.filter((e) => kind === undefined || e.kind === kind),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON lines are probed freely in assertions
function parse(log: { data: Buffer }): Array<Record<string, any>> {
  return log.data
    .toString('utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

describe('buildToolCallLog', () => {
  it('writes a request and a response per call in the existing field order', () => {
    const log = buildToolCallLog(
      source([row(1), row(2, { status: 'pending', ended_at: null, envelope: null })]),
      'abc',
    );
    const text = log.data.toString('utf8');
    expect(text.endsWith('\n')).toBe(true);
    const lines = parse(log);
    expect(lines.map((l) => Object.keys(l).slice(0, 5))).toEqual(
      Array(3).fill(['ts', 'sessionId', 'direction', 'method', 'payload']),
    );
    expect(lines.map((l) => [l.seq, l.direction])).toEqual([
      [1, 'request'],
      [1, 'response'],
      [2, 'request'],
    ]);
    expect(lines[0]!.payload).toEqual({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'find', arguments: { window: 'Save As', value: 'Save' } },
    });
    expect(lines[1]!.payload).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { ok: true, result: { found: true } },
    });
    for (const l of lines) expect(line(l)).toEqual([]);
    expect(log).toMatchObject({ lines: 3, calls: 2, truncated: false, imagesRedacted: 0 });
  });

  it('rebuilds a CallToolResult: the envelope back in its text block, the image block marked', () => {
    const envelope = {
      ok: true,
      result: { kind: 'capture-summary', width: 1, height: 1, artifact: 'artifacts/a.png' },
    };
    const response = {
      content: [
        {
          type: 'image',
          mimeType: 'image/png',
          summary: { kind: 'capture-summary', artifact: 'artifacts/a.png' },
        },
        { type: 'text', text: '[envelope]' },
      ],
      isError: false,
    };
    const lines = parse(
      buildToolCallLog(
        source([
          row(1, { tool: 'capture', envelope: JSON.stringify(envelope), response: JSON.stringify(response) }),
        ]),
        's',
      ),
    );
    const result = lines[1]!.payload.result;
    expect(result.content[0]).toEqual({
      type: 'image',
      data: '<redacted base64>',
      mimeType: 'image/png',
      summary: { kind: 'capture-summary', artifact: 'artifacts/a.png' },
    });
    expect(JSON.parse(result.content[1].text)).toEqual(envelope);
    expect(result.isError).toBe(false);
  });

  it('splices each envelope into a response shape many calls share, scrubbed and counted for each', () => {
    // One stored shape (with image bytes the recorder should have kept out, and two envelope blocks) for
    // three calls: each line is the shape with its own envelope, byte for byte as JSON.stringify writes it.
    const response = JSON.stringify({
      content: [
        { type: 'image', data: PNG, mimeType: 'image/png' },
        { type: 'text', text: '[envelope]' },
        { type: 'text', text: '[envelope]' },
      ],
      isError: false,
    });
    const texts = ['plain', 'say "hi"\u2028 \\ — ☕', '\ud800 lone'];
    const rows = texts.map((text, i) =>
      row(i + 1, { envelope: JSON.stringify({ ok: true, result: { text } }), response }),
    );
    const log = buildToolCallLog(source(rows), 's');
    const lines = log.data.toString('utf8').trim().split('\n');
    expect(log.imagesRedacted).toBe(3);
    rows.forEach((r, i) => {
      const result = {
        content: [
          { type: 'image', data: '<redacted base64>', mimeType: 'image/png' },
          { type: 'text', text: r.envelope },
          { type: 'text', text: r.envelope },
        ],
        isError: false,
      };
      const payload = `{"jsonrpc":"2.0","id":${r.seq},"result":${JSON.stringify(result)}}`;
      expect(lines[2 * i + 1]).toContain(`"payload":${payload},"seq":${r.seq}}`);
    });
  });

  it('keeps a stored JSON-RPC response and a JSON-RPC error as they were', () => {
    const rpc = {
      jsonrpc: '2.0',
      id: 7,
      result: { content: [{ type: 'text', text: '[envelope]' }], isError: true },
    };
    const fault = { jsonrpc: '2.0', id: 8, error: { code: -32601, message: 'Method not found' } };
    const lines = parse(
      buildToolCallLog(
        source([
          row(1, {
            rpc_id: '7',
            status: 'failed',
            envelope: '{"ok":false,"error":{"code":"x"}}',
            response: JSON.stringify(rpc),
          }),
          row(2, { rpc_id: '8', status: 'fault', envelope: null, response: JSON.stringify(fault) }),
          row(3, {
            rpc_id: null,
            status: 'fault',
            envelope: null,
            error_code: '-32603',
            error_detail: 'boom',
          }),
        ]),
        's',
      ),
    );
    expect(lines[1]!.payload.result.content[0].text).toBe('{"ok":false,"error":{"code":"x"}}');
    expect(lines[3]!.payload).toEqual(fault);
    expect(lines[4]!.payload.id).toBe(3); // no JSON-RPC id (wrap transport): the seq pairs the lines
    expect(lines[5]!.payload).toEqual({ jsonrpc: '2.0', id: 3, error: { code: '-32603', message: 'boom' } });
    for (const l of lines) expect(line(l)).toEqual([]);
  });

  it('marks payloads the recorder dropped, and keeps args that are not JSON as text', () => {
    const lines = parse(
      buildToolCallLog(
        source([row(1, { args: null, envelope: null, payload_dropped: 1 }), row(2, { args: 'not json {' })]),
        's',
      ),
    );
    expect(lines[0]).toMatchObject({ payloadDropped: true, payload: { params: { name: 'find' } } });
    expect(lines[0]!.payload.params.arguments).toBeUndefined();
    expect(lines[1]).toMatchObject({ payloadDropped: true });
    expect(typeof lines[1]!.payload.result).toBe('string');
    expect(lines[2]!.payload.params.arguments).toBe('not json {');
  });

  it('puts exchanges (initialize, tools/list) and stray protocol faults in time order', () => {
    const init = {
      method: 'initialize',
      request: { jsonrpc: '2.0', id: 0, method: 'initialize', params: {} },
      response: { jsonrpc: '2.0', id: 0, result: { serverInfo: { name: 'MCEC', version: '3.0.4' } } },
    };
    const lines = parse(
      buildToolCallLog(
        source(
          [row(1), row(3)],
          [
            event(1, 'exchange', '2026-12-02T10:15:00.500Z', init),
            event(2, 'protocol-fault', '2026-12-02T10:15:02.000Z', {
              code: -32700,
              message: 'Parse error',
              id: null,
            }),
            event(3, 'protocol-fault', '2026-12-02T10:15:02.500Z', { code: -1, message: 'dup' }, 3),
            event(4, 'exchange', '2026-12-02T10:15:04.000Z', {
              method: 'notifications/initialized',
              request: { jsonrpc: '2.0', method: 'notifications/initialized' },
            }),
          ],
        ),
        's',
      ),
    );
    expect(lines.map((l) => `${l.method}:${l.direction}`)).toEqual([
      'initialize:request',
      'initialize:response',
      'tools/call:request',
      'tools/call:response',
      'null:response',
      'tools/call:request',
      'tools/call:response',
      'notifications/initialized:request',
    ]);
    expect(lines[4]!.payload).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'Parse error' },
    });
    for (const l of lines) expect(line(l)).toEqual([]);
  });

  it('stops at the cap with the truncation line, never past the cap', () => {
    const rows = Array.from({ length: 50 }, (_, i) => row(i + 1));
    const full = buildToolCallLog(source(rows), 's');
    for (const cap of [300, 1000, 4000, full.data.length - 1]) {
      const log = buildToolCallLog(source(rows), 's', { capBytes: cap });
      expect(log.data.length).toBeLessThanOrEqual(cap);
      expect(log.truncated).toBe(true);
      const text = log.data.toString('utf8').trim().split('\n');
      expect(text.at(-1)).toBe(TRUNCATION_LINE);
      for (const l of text) expect(line(JSON.parse(l))).toEqual([]);
    }
    expect(buildToolCallLog(source(rows), 's', { capBytes: full.data.length }).truncated).toBe(false);
  });

  it('writes the same bytes into a file, a staging buffer at a time, cut back across writes at the cap', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcec-log-'));
    try {
      // ~1 KB per call: 2,000 calls cross the 256 KiB staging buffer several times; three lines are larger
      // than the buffer (a big `windows` envelope), and are written where they belong, not at the start.
      const rows = Array.from({ length: 2_000 }, (_, i) =>
        row(i + 1, {
          envelope: JSON.stringify({
            ok: true,
            result: { text: 'é'.repeat(i % 700 === 350 ? 200_000 : 400 + (i % 300)) },
          }),
        }),
      );
      const full = buildToolCallLog(source(rows), 's');
      for (const cap of [undefined, 262_144 + 500, 600_000, full.data.length - 1]) {
        const inMemory = buildToolCallLog(source(rows), 's', { capBytes: cap });
        const file = path.join(dir, `log-${cap}.jsonl`);
        // Rows handed over one at a time, as the bundle does while report.html measures them.
        const writer = new ToolCallLogFile(source(rows), 's', file, { capBytes: cap });
        for (const r of rows) writer.add(r);
        const written = writer.end();
        expect(fs.readFileSync(file).equals(inMemory.data)).toBe(true);
        const { data, ...facts } = inMemory;
        expect(written).toEqual({ ...facts, size: data.length });
      }
      expect(() => new ToolCallLogFile(source(rows), 's', path.join(dir, `log-${undefined}.jsonl`))).toThrow(
        /EEXIST/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('replaces image bytes wherever they hide: args, base64 fields, data URIs, escaped nested JSON', () => {
    const nested = JSON.stringify({ success: true, data: { base64: PNG } })
      .split('+')
      .join('\\u002B');
    const rows = [
      row(1, { args: JSON.stringify({ image: `data:image/png;base64,${PNG}` }) }),
      row(2, { envelope: JSON.stringify({ ok: true, result: { output: nested } }) }),
      row(3, { envelope: JSON.stringify({ ok: true, result: { base64: PNG, blob: PNG } }) }),
      row(4, { envelope: JSON.stringify({ ok: true, result: { sha256: 'ab'.repeat(32) } }) }),
    ];
    const log = buildToolCallLog(source(rows), 's');
    const lines = parse(log);
    for (const l of lines) expect(inlineImages(l)).toBe(0);
    expect(log.imagesRedacted).toBe(4);
    expect(lines[7]!.payload.result.result.sha256).toBe('ab'.repeat(32));
    expect(log.data.toString('utf8')).not.toContain(PNG.slice(0, 40));
  });
});

describe('scanners', () => {
  const naive = (s: string, min: number) => {
    let run = 0;
    for (const ch of s) {
      run = /[A-Za-z0-9+/]/.test(ch) ? run + 1 : 0;
      if (run >= min) return true;
    }
    return false;
  };

  it('hasBase64Run agrees with a naive scan', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'Z', '0', '+', '/', ' ', '"', '-', 'é') }),
        fc.integer({ min: 1, max: 12 }),
        (s, min) => {
          expect(hasBase64Run(s, min)).toBe(naive(s, min));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('Base64RunScanner gives the same answer however the input is chunked, escapes included', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('abc', 'Q', '\\u002B', '\\\\u002F', '\\/', '"', ' ', '\\', '=', 'u002b'), {
          maxLength: 60,
        }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 5 }),
        (parts, cuts) => {
          const text = parts.join('');
          const whole = new Base64RunScanner();
          whole.feed(text);
          const chunked = new Base64RunScanner();
          const bytes = Buffer.from(text);
          let at = 0;
          let i = 0;
          while (at < bytes.length) {
            const n = cuts[i++ % cuts.length]!;
            chunked.feed(bytes.subarray(at, at + n));
            at += n;
          }
          expect(chunked.longest).toBe(whole.longest);
          expect(chunked.finding).toBe(whole.finding);
        },
      ),
      { numRuns: 300 },
    );
    expect(longestBase64Run('ab\\u002Bcd')).toBe(5);
    expect(longestBase64Run('ab\\\\u002Fcd')).toBe(5);
  });

  it('Base64RunScanner finds image bytes, not merely long words, across chunk boundaries', () => {
    const png = Buffer.from(PNG, 'base64');
    const scan = (parts: Array<string | Buffer>, options = {}) => {
      const s = new Base64RunScanner(options);
      for (const p of parts) s.feed(p);
      return s.finding;
    };
    const long = PNG.repeat(3);
    expect(scan([`text ${long} text`])).toMatch(/base64 image bytes/);
    expect(scan([`x "${long.slice(0, 30)}`, `${long.slice(30)}"`])).toMatch(/base64 image bytes/);
    // The server's JSON escaping of '+' and '/' inside a nested string does not break the run.
    expect(scan([JSON.stringify(long).split('+').join('\\u002B')])).toMatch(/base64 image bytes/);
    expect(scan([`![x](data:image/png;base64,${long})`])).toMatch(/base64 image bytes/);
    // Raw PNG bytes, even cut in two between chunks.
    expect(scan([Buffer.concat([Buffer.from('abc'), png.subarray(0, 3)]), png.subarray(3)])).toMatch(
      /raw image/,
    );
    // Long words, hashes and ids are not images.
    expect(scan(['A'.repeat(5000), ` ${'ab'.repeat(32)} `, 'x'.repeat(3000)])).toBeNull();
    expect(scan(['A'.repeat(100_000)], { maxPlainRun: 100_000 })).toMatch(/100000-character base64 run/);
    // JPEG's short marker counts only in text.
    expect(scan([Buffer.from('ffd8ffe0', 'hex')])).toBeNull();
    expect(scan([Buffer.from('ffd8ffe0', 'hex')], { text: true })).toMatch(/raw image/);
  });

  it('scrubImageBytes leaves values without images alone and counts what it replaced', () => {
    const clean = { a: 'hello', b: [1, 2, { c: 'ab'.repeat(40) }] };
    expect(scrubImageBytes(clean)).toEqual({ value: clean, replaced: 0 });
    const dirty = {
      content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
      x: `data:image/png;base64,${PNG}`,
    };
    const res = scrubImageBytes(dirty);
    expect(res.replaced).toBe(2);
    expect(JSON.stringify(res.value)).not.toContain('iVBOR');
    expect(scrubImageBytes(res.value).replaced).toBe(0);
  });
});

describe('units', () => {
  it('parses sizes and durations, and refuses nonsense', () => {
    expect(parseByteSize('1000')).toBe(1000);
    expect(parseByteSize('500KB')).toBe(512_000);
    expect(parseByteSize('10MB')).toBe(10 * 1024 * 1024);
    expect(parseByteSize('1.5 GiB')).toBe(1.5 * 1024 ** 3);
    for (const bad of ['', '0', '-5', '10XB', 'ten', '1e9']) expect(parseByteSize(bad), bad).toBeNull();
    expect(parseDuration('7d')).toBe(7 * 86_400_000);
    expect(parseDuration('12h')).toBe(12 * 3_600_000);
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('45s')).toBe(45_000);
    for (const bad of ['', '7', 'd', '0d', '-1d', '7y']) expect(parseDuration(bad), bad).toBeNull();
  });
});
