/**
 * Hostile input, each through `wrap` and through the bundle: 10,000 generated and mutated envelopes
 * (fast-check), a 100 MB base64 string, JSON nested 10,000 levels deep, invalid UTF-8 and lone surrogates, a
 * PNG whose header claims 50,000 x 50,000 pixels, and session ids with `/`, `..`, NUL and 10 KB of
 * characters. None throws into the agent, the heap after GC does not keep what went through, nothing is
 * written outside the sessions dir, and no image bytes or secrets reach the log or the bundle's text files.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { verifyBundle } from '../../src/bundle/verify.js';
import { ERROR_CATEGORIES } from '../../src/contract/types.js';
import { createRecorder, type Dispatch, quickOutcome, type Recorder } from '../../src/record/index.js';
import { escapeJsonText } from '../../src/wire/json-text.js';
import { claimedSizePng } from '../support/images.js';
import {
  bundleCli,
  distinctiveSlice,
  heapAfterGc,
  listTree,
  logTexts,
  realPng,
  removeRoot,
  reportFigure,
  scanBundleTexts,
  scanLogs,
  tempRoot,
  zipFiles,
} from './helpers.js';

const SAFE_DIR = /^\d{8}-\d{6}-[A-Za-z0-9_-]{1,64}$/;
const MiB = 1024 * 1024;

/** A temp root with witnesses around the sessions dir, so writes outside it show up. */
function witnessedRoot() {
  const { root, sessionsDir } = tempRoot();
  fs.writeFileSync(path.join(root, 'witness.txt'), 'untouched');
  fs.mkdirSync(path.join(root, 'outside'));
  fs.writeFileSync(path.join(root, 'outside', 'x'), 'untouched');
  const before = listTree(root, ['sessions']);
  return {
    root,
    sessionsDir,
    /** Everything outside the sessions dir is as it was. */
    assertNothingOutside() {
      expect(listTree(root, ['sessions'])).toEqual(before);
      expect(fs.readFileSync(path.join(root, 'witness.txt'), 'utf8')).toBe('untouched');
    },
  };
}

/** Every session dir has a safe name; returns them. */
function sessionDirs(sessionsDir: string): string[] {
  // Zips and the sessions catalog (catalog.sqlite and its WAL files) sit beside the session dirs.
  const dirs = fs
    .readdirSync(sessionsDir)
    .filter((d) => !d.endsWith('.zip') && !d.startsWith('catalog.sqlite'));
  for (const d of dirs) expect(d).toMatch(SAFE_DIR);
  return dirs.map((d) => path.join(sessionsDir, d));
}

/** Bundle every session: each zip verifies, and its text files hold none of the needles. */
async function bundleAll(sessionsDir: string, needles: string[]): Promise<number> {
  let n = 0;
  for (const dir of sessionDirs(sessionsDir)) {
    if (!fs.existsSync(path.join(dir, 'session.sqlite'))) continue;
    const result = await buildBundle(dir);
    expect(path.dirname(result.bundle)).toBe(sessionsDir);
    const verified = await verifyBundle(result.bundle);
    expect(verified.problems, dir).toEqual([]);
    const files = zipFiles(result.bundle);
    expect(scanBundleTexts(files, needles), dir).toEqual([]);
    // Every text file is valid UTF-8, and every JSON line parses.
    for (const [name, data] of files) {
      if (!/\.(md|json|jsonl)$/.test(name)) continue;
      const text = new TextDecoder('utf-8', { fatal: true }).decode(data);
      if (name.endsWith('.jsonl')) for (const line of text.split('\n').filter(Boolean)) JSON.parse(line);
      else if (name.endsWith('.json')) JSON.parse(text);
    }
    n++;
  }
  return n;
}

/** Call `wrapped` for every case with 16 in flight; collects anything thrown into the agent. */
async function drive<T>(items: T[], call: (item: T) => Promise<void>, inFlight = 16): Promise<unknown[]> {
  const thrown: unknown[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await call(item);
      } catch (err) {
        thrown.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return thrown;
}

/** The promise, or a failure naming `what` when it has not settled within `ms` (a call that never returns). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: did not return within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The recorder's wrap around a dispatch that answers `args.out`: the output rides along as a non-enumerable
 * property, so the stored arguments are only the enumerable ones (as an agent's would be).
 */
function answering(recorder: Recorder): (tool: string, args: Record<string, unknown>) => Promise<unknown> {
  const wrapped = recorder.wrap<Dispatch>(async (_tool, args) => (args as { out?: unknown }).out);
  return (tool, args) => {
    const { out, ...rest } = args;
    Object.defineProperty(rest, 'out', { value: out, enumerable: false });
    return wrapped(tool, rest);
  };
}

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) removeRoot(r);
});

// Each case records, bundles and greps whole trees (9 s for the ids alone on a quiet machine): room for a busy core.
describe('hostile input through wrap and the bundle', { timeout: 120_000 }, () => {
  let pngs: Buffer[] = [];
  let needles: string[] = [];
  const secret = `S3cr3t-${randomBytes(8).toString('hex')}`;
  beforeAll(async () => {
    pngs = [await realPng(40, 30, 1), await realPng(33, 21, 2), await realPng(64, 8, 3)];
    needles = [
      ...pngs.flatMap((p) => {
        const b64 = p.toString('base64');
        return [b64.slice(0, 64), distinctiveSlice(b64)];
      }),
      secret,
    ];
  });

  it('10,000 generated and mutated envelopes', async () => {
    const w = witnessedRoot();
    roots.push(w.root);
    const ID_POOL = [
      '5f19c9c01a3f',
      'a1b2c3d4e5f6',
      '../x',
      'a/b',
      '..',
      'nul\u0000id',
      'x'.repeat(10 * 1024),
      '\ud800lone',
      'C:\\Windows',
      '',
    ];
    const idArb = fc.oneof(
      { weight: 8, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constant(null) },
      { weight: 2, arbitrary: fc.constantFrom(...ID_POOL) },
    );
    const caseArb = fc.record({
      tool: fc.oneof(
        fc.constantFrom(
          'capture',
          'find',
          'query',
          'wait-for',
          'send_command',
          'session-start',
          'session-end',
          'get-text',
          'click',
        ),
        fc.string({ maxLength: 12 }),
      ),
      ok: fc.boolean(),
      sid: idArb,
      argSid: idArb,
      result: fc.jsonValue({ maxDepth: 3 }),
      code: fc.oneof(
        fc.constantFrom(
          'selector-matched-3',
          'frame-all-black',
          'wait-condition-timeout',
          'emergency-stopped',
        ),
        fc.string({ maxLength: 12 }),
      ),
      category: fc.oneof(fc.constantFrom(...ERROR_CATEGORIES), fc.string({ maxLength: 12 })),
      detail: fc.oneof(fc.string({ maxLength: 40 }), fc.jsonValue({ maxDepth: 2 })),
      warnings: fc.array(
        fc.record({ code: fc.string({ maxLength: 10 }), detail: fc.string({ maxLength: 20 }) }),
        {
          maxLength: 3,
        },
      ),
      plant: fc.constantFrom(
        'none',
        'result',
        'partialResult',
        'lastObservation',
        'imageBlock',
        'nested',
        'dataUri',
        'args',
        'thrown',
      ),
      png: fc.nat(2),
      secretWhere: fc.constantFrom('none', 'args', 'result', 'error', 'header'),
      shape: fc.constantFrom('bare', 'ctr', 'ctr-escaped', 'jsonrpc', 'jsonrpc-error', 'legacy', 'anything'),
      mutation: fc.constantFrom(
        'none',
        'none',
        'none',
        'drop-key',
        'wrong-type',
        'truncate-text',
        'swap-ok',
        'extra',
        'null',
      ),
      cut: fc.double({ min: 0, max: 1, noNaN: true }),
      anything: fc.anything({ maxDepth: 3 }),
      throws: fc.nat(19),
    });
    type Case = ReturnType<typeof caseArb.generate>['value'] & {
      output?: unknown;
      args?: Record<string, unknown>;
    };
    const cases = fc.sample(caseArb, { numRuns: 10_000, seed: 20261202 }) as Case[];

    // Build each case's output and arguments (plain data, so the same input gives the same case).
    for (const c of cases) {
      const b64 = pngs[c.png]!.toString('base64');
      const capture = {
        handle: 1,
        width: 40,
        height: 30,
        encoding: 'png',
        bytes: pngs[c.png]!.length,
        base64: b64,
      };
      const env: Record<string, unknown> = { ok: c.ok, sessionId: c.sid };
      if (c.ok) env.result = c.plant === 'result' ? { ...capture, extra: c.result } : c.result;
      else {
        const error: Record<string, unknown> = { code: c.code, category: c.category, detail: c.detail };
        if (c.plant === 'partialResult') error.partialResult = capture;
        if (c.plant === 'lastObservation') error.lastObservation = capture;
        if (c.secretWhere === 'error') error.context = { password: secret };
        env.error = error;
      }
      if (c.plant === 'nested')
        env.result = { output: JSON.stringify({ success: true, command: 'capture', data: capture }) };
      if (c.plant === 'dataUri') env.result = { image: `data:image/png;base64,${b64}` };
      if (c.secretWhere === 'result') env.result = { ...(env.result as object), token: secret };
      if (c.warnings.length > 0) env.warnings = c.warnings;
      // Mutations of the envelope itself.
      if (c.mutation === 'drop-key') delete env.ok;
      if (c.mutation === 'wrong-type') env.ok = 'yes';
      if (c.mutation === 'swap-ok') env.ok = !c.ok;
      if (c.mutation === 'extra') env.__proto__x = c.anything;
      let text = JSON.stringify(env);
      if (c.shape === 'ctr-escaped') text = escapeJsonText(text);
      if (c.mutation === 'truncate-text') text = text.slice(0, Math.floor(text.length * c.cut));
      const blocks: unknown[] = [];
      if (c.plant === 'imageBlock') blocks.push({ type: 'image', data: b64, mimeType: 'image/png' });
      blocks.push({ type: 'text', text });
      const ctr = { content: blocks, isError: !c.ok };
      switch (c.shape) {
        case 'bare':
          c.output = c.mutation === 'null' ? null : env;
          break;
        case 'ctr':
        case 'ctr-escaped':
          c.output = c.mutation === 'null' ? { content: null, isError: 'x' } : ctr;
          break;
        case 'jsonrpc':
          c.output = { jsonrpc: '2.0', id: c.png, result: ctr };
          break;
        case 'jsonrpc-error':
          c.output = {
            jsonrpc: '2.0',
            id: null,
            error: { code: -32603, message: c.plant === 'thrown' ? b64 : 'internal' },
          };
          break;
        case 'legacy':
          c.output = {
            success: c.ok,
            command: c.tool,
            data: env.result ?? null,
            error: c.ok ? undefined : String(c.code),
          };
          break;
        default:
          c.output = c.anything;
      }
      const args: Record<string, unknown> = { window: 'Untitled - Notepad' };
      if (c.argSid !== undefined) args.sessionId = c.argSid;
      if (c.secretWhere === 'args') args.password = secret;
      if (c.secretWhere === 'header') args.headers = { Authorization: `Bearer ${secret}` };
      if (c.plant === 'args') args.image = b64;
      c.args = args;
    }

    const heapBefore = heapAfterGc();
    const notices: string[] = [];
    let recorder: Recorder | undefined = createRecorder({
      sessionsDir: w.sessionsDir,
      stderr: (l) => notices.push(l),
    });
    const wrapped = recorder.wrap<Dispatch>(async (_tool, args) => {
      const c = (args as { __case: Case }).__case;
      if (c.throws === 0)
        throw new Error(c.plant === 'thrown' ? `boom ${pngs[c.png]!.toString('base64')}` : 'boom');
      return c.output;
    });
    const mismatched: number[] = [];
    const thrown = await drive(cases, async (c) => {
      // The case rides along in the arguments object; the recorder stores the redacted args as JSON, so it is
      // made non-enumerable to keep it out of the log (the agent's real arguments are the enumerable ones).
      const args = { ...c.args };
      Object.defineProperty(args, '__case', { value: c, enumerable: false });
      const got = await wrapped(c.tool, args);
      if (c.throws !== 0 && quickOutcome(c.output).ok === true && got !== c.output)
        mismatched.push(cases.indexOf(c));
      if (c.throws === 0 && !JSON.stringify(got).includes('unhandled')) mismatched.push(cases.indexOf(c));
    });
    expect(thrown).toEqual([]);
    expect(mismatched).toEqual([]);
    await recorder.close();
    recorder = undefined;

    expect(notices.filter((n) => !n.includes('recording failed'))).toEqual([]);
    expect(scanLogs(w.sessionsDir, needles)).toEqual([]);
    const bundled = await bundleAll(w.sessionsDir, needles);
    expect(bundled).toBeGreaterThanOrEqual(3);
    w.assertNothingOutside();
    // Nothing of the 10,000 outputs is kept once the recorder is closed.
    const growth = heapAfterGc() - heapBefore;
    reportFigure('hostile-envelopes', { cases: cases.length, sessions: bundled, heapGrowthBytes: growth });
    expect(growth).toBeLessThan(64 * MiB);
  }, 300_000); // about 50 s alone; CI runs two test forks on two cores

  it('a 100 MB base64 string (as a capture and as a plain field)', async () => {
    const w = witnessedRoot();
    roots.push(w.root);
    const heapBefore = heapAfterGc();
    const recorder = createRecorder({ sessionsDir: w.sessionsDir, stderr: () => {} });
    const wrapped = answering(recorder);
    // The big values live only inside this function, so the heap figure afterwards counts what the recorder
    // kept, not what the test holds.
    const feed = async (): Promise<string> => {
      // 75 MB of bytes behind a PNG signature: 100 MB of base64 that looks like a capture.
      const fake = Buffer.concat([pngs[0]!.subarray(0, 33), randomBytes(75 * MiB - 33)]);
      const big = fake.toString('base64');
      expect(big.length).toBeGreaterThanOrEqual(100 * 1000 * 1000);
      const asCapture = {
        ok: true,
        sessionId: null,
        result: { handle: 1, width: 1920, height: 1080, encoding: 'png', bytes: fake.length, base64: big },
      };
      const asText = { ok: true, sessionId: null, result: { text: 'A'.repeat(100 * MiB) } };
      expect(await wrapped('capture', { out: asCapture })).toBe(asCapture);
      expect(await wrapped('get-text', { out: asText })).toBe(asText);
      const ctr = { content: [{ type: 'text', text: JSON.stringify(asCapture) }], isError: false };
      expect(await wrapped('capture', { out: ctr })).toBe(ctr);
      return distinctiveSlice(big.slice(0, 4000));
    };
    const slice = await feed();
    await recorder.close();
    const counts = recorder.session(recorder.defaultSessionId)!.counts;
    expect(counts.calls).toBe(3);
    const [dir] = sessionDirs(w.sessionsDir);
    // The log did not take the 100 MB strings (the capture became a summary, the text was dropped past the
    // 8 MiB payload limit, and so must the last good observation that get-text set).
    const logBytes = fs.statSync(path.join(dir!, 'session.sqlite')).size;
    expect(logBytes, 'session.sqlite holds the 100 MB text').toBeLessThan(20 * MiB);
    expect(scanLogs(w.sessionsDir, [slice, 'A'.repeat(1000)])).toEqual([]);
    expect(await bundleAll(w.sessionsDir, [slice, 'A'.repeat(1000)])).toBe(1);
    w.assertNothingOutside();
    // The recorder (still referenced, as an agent would keep it) holds none of the 100 MB strings.
    const growth = heapAfterGc() - heapBefore;
    reportFigure('hostile-100mb', { heapGrowthBytes: growth, logBytes });
    expect(growth).toBeLessThan(64 * MiB);
  }, 120_000);

  it('JSON nested 10,000 levels deep (as an object and as envelope text)', async () => {
    const w = witnessedRoot();
    roots.push(w.root);
    const recorder = createRecorder({ sessionsDir: w.sessionsDir, stderr: () => {} });
    const wrapped = answering(recorder);
    let deep: unknown = 'bottom';
    for (let i = 0; i < 10_000; i++) deep = i % 2 === 0 ? [deep] : { a: deep };
    const asObject = { ok: true, sessionId: null, result: deep };
    const deepText = `{"ok":true,"sessionId":null,"result":${'['.repeat(10_000)}1${']'.repeat(10_000)}}`;
    const asText = { content: [{ type: 'text', text: deepText }], isError: false };
    const failing = {
      ok: false,
      sessionId: null,
      error: { code: 'uia-faulted', category: 'internal', detail: deep },
    };
    // The deep success becomes the last good observation; the failure after it gets it attached.
    expect(await within(wrapped('query', { out: asObject }), 10_000, 'deep result')).toBe(asObject);
    expect(await within(wrapped('query', { out: asText }), 10_000, 'deep envelope text')).toBe(asText);
    await expect(
      within(wrapped('query', { out: failing }), 10_000, 'failure after a deep observation'),
    ).resolves.toBeDefined();
    await expect(
      within(wrapped('query', { out: { ok: true }, deep }), 10_000, 'deep arguments'),
    ).resolves.toBeDefined();
    await within(recorder.close(), 10_000, 'close');
    expect(recorder.session(recorder.defaultSessionId)!.counts.calls).toBe(4);
    expect(await bundleAll(w.sessionsDir, [])).toBe(1);
    w.assertNothingOutside();
  });

  it('invalid UTF-8 and lone surrogates in tools, arguments, envelopes and ids', async () => {
    const w = witnessedRoot();
    roots.push(w.root);
    const recorder = createRecorder({ sessionsDir: w.sessionsDir, stderr: () => {} });
    const wrapped = answering(recorder);
    const invalid = Buffer.from([
      0x7b, 0xff, 0xfe, 0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x28, 0x8c, 0xbc,
    ]);
    const lone = 'a\ud800b\udfffc\ud83d';
    const outputs: unknown[] = [
      {
        ok: true,
        sessionId: null,
        result: { text: invalid.toString('utf8'), latin: invalid.toString('latin1'), lone },
      },
      { ok: false, sessionId: null, error: { code: `x${lone}`, category: 'internal', detail: lone } },
      { content: [{ type: 'text', text: invalid.toString('latin1') }], isError: false },
      {
        content: [{ type: 'text', text: `{"ok":true,"sessionId":null,"result":{"s":"${lone}","\ud800":1}}` }],
        isError: false,
      },
      { ok: true, sessionId: `id${lone}`, result: { lone } },
    ];
    for (const out of outputs) {
      await expect(
        wrapped(`find${lone}`, { out, [lone]: lone, password: `${lone}${secret}` }),
      ).resolves.toBeDefined();
    }
    await recorder.close();
    expect(scanLogs(w.sessionsDir, [secret])).toEqual([]);
    expect(await bundleAll(w.sessionsDir, [secret])).toBeGreaterThanOrEqual(1);
    w.assertNothingOutside();
  });

  it('a PNG whose header claims 50,000 x 50,000 pixels', async () => {
    const w = witnessedRoot();
    roots.push(w.root);
    const bomb = claimedSizePng(50_000, 50_000);
    const b64 = bomb.toString('base64');
    const heapBefore = heapAfterGc();
    const rssBefore = process.memoryUsage().rss;
    const recorder = createRecorder({ sessionsDir: w.sessionsDir, stderr: () => {} });
    const wrapped = answering(recorder);
    const declared = {
      ok: true,
      sessionId: null,
      result: {
        handle: 1,
        width: 50_000,
        height: 50_000,
        encoding: 'png',
        bytes: bomb.length,
        base64: b64,
        blankCheck: { blank: false, dominantFraction: 0.5, dominantIsDark: false },
      },
    };
    const undeclared = {
      ok: true,
      sessionId: null,
      result: { handle: 1, width: 50_000, height: 50_000, encoding: 'png', bytes: bomb.length, base64: b64 },
    };
    const block = {
      content: [
        { type: 'image', data: b64, mimeType: 'image/png' },
        { type: 'text', text: JSON.stringify(undeclared) },
      ],
      isError: false,
    };
    const partial = {
      ok: false,
      sessionId: null,
      error: {
        code: 'frame-all-black',
        category: 'capture-blank',
        detail: 'black',
        partialResult: undeclared.result,
      },
    };
    for (const out of [declared, undeclared, block]) expect(await wrapped('capture', { out })).toBe(out);
    await expect(wrapped('capture', { out: partial })).resolves.toBeDefined();
    await recorder.close();
    // Never decoded: memory stays flat (a decode would need 7.5 GB).
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(512 * MiB);
    expect(heapAfterGc() - heapBefore).toBeLessThan(32 * MiB);
    const [dir] = sessionDirs(w.sessionsDir);
    const artifacts = fs.existsSync(path.join(dir!, 'artifacts'))
      ? fs.readdirSync(path.join(dir!, 'artifacts'))
      : [];
    const texts = logTexts(path.join(dir!, 'session.sqlite'));
    const errors = texts.filter((t) => t.where === 'artifacts.error').map((t) => t.text);
    // Refused with a reason; no file kept.
    expect(artifacts).toEqual([]);
    expect(errors.length).toBeGreaterThanOrEqual(1);
    for (const e of errors) expect(e).toMatch(/pixel|limit|large|bomb|dimension/i);
    expect(scanLogs(w.sessionsDir, [b64.slice(0, 64)])).toEqual([]);
    expect(await bundleAll(w.sessionsDir, [b64.slice(0, 64)])).toBe(1);
    w.assertNothingOutside();
  });

  it('session ids with /, .., NUL and 10 KB of characters', async () => {
    const w = witnessedRoot();
    roots.push(w.root);
    const recorder = createRecorder({ sessionsDir: w.sessionsDir, stderr: () => {} });
    const wrapped = answering(recorder);
    const hostile = [
      '../escape',
      '../../etc/passwd',
      'a/b/c',
      '..',
      '.',
      'nul\u0000byte',
      'x'.repeat(10 * 1024),
      '\\\\server\\share',
      '/absolute',
      `${'../'.repeat(50)}tmp`,
    ];
    for (const id of hostile) {
      const env = { ok: true, sessionId: id, result: { found: true } };
      expect(await wrapped('find', { out: env })).toBe(env);
      const env2 = { ok: true, sessionId: null, result: { found: true } };
      expect(await wrapped('find', { out: env2, sessionId: id })).toBe(env2);
      recorder.step(id, 'hostile step', 'ok');
      await recorder.end(id, { passed: true });
      const info = recorder.session(id);
      expect(info, id.slice(0, 40)).toBeDefined();
      expect(path.relative(w.sessionsDir, info!.dir).startsWith('..')).toBe(false);
      expect(path.basename(info!.dir)).toMatch(SAFE_DIR);
    }
    await recorder.close();
    const dirs = sessionDirs(w.sessionsDir);
    expect(dirs.length).toBeGreaterThanOrEqual(hostile.length - 1);
    // The original ids are kept escaped and clipped, never used as paths.
    for (const t of dirs.flatMap((d) => logTexts(path.join(d, 'session.sqlite')))) {
      if (t.where === 'session.original_id') expect(t.text.length).toBeLessThanOrEqual(200);
      expect(t.text.includes('\u0000')).toBe(false);
    }
    expect(await bundleAll(w.sessionsDir, [])).toBe(dirs.length);
    // The CLI refuses the hostile ids themselves (usage error) and writes nothing.
    for (const id of ['../escape', 'a/b', '..', 'x'.repeat(10 * 1024)]) {
      const r = bundleCli([id, '--sessions', w.sessionsDir]);
      expect(r.status, `${id.slice(0, 20)}: ${r.stderr.slice(0, 200)}`).not.toBe(0);
      expect(r.stderr.length).toBeLessThan(4096);
    }
    w.assertNothingOutside();
  });
});
