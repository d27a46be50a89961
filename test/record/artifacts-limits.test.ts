import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import {
  calls,
  events,
  expectCleanLog,
  expectEventsValid,
  makePng,
  NOTEPAD,
  sessionDirs,
  sha256,
  withLog,
} from './helpers.js';

const temp = tempDirPerTest();

const SID = 'a1b2c3d4e5f6';

function onlyDir(): string {
  const [name] = sessionDirs(temp.dir);
  return path.join(temp.dir, name!);
}

/** A real PNG whose IHDR is rewritten to declare huge dimensions (CRC fixed): a decompression bomb's header. */
function bombHeader(png: Buffer, width: number, height: number): Buffer {
  const out = Buffer.from(png);
  out.writeUInt32BE(width, 16);
  out.writeUInt32BE(height, 20);
  out.writeUInt32BE(zlib.crc32(out.subarray(12, 29)), 29);
  return out;
}

function capture(png: Buffer | string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  const base64 = typeof png === 'string' ? png : png.toString('base64');
  return {
    handle: NOTEPAD.handle,
    width: 64,
    height: 48,
    encoding: 'png',
    bytes: base64.length,
    base64,
    ...fields,
  };
}

describe('artifacts', () => {
  it('bad, truncated, non-image and bomb bytes get an artifactError; the call is recorded and nothing throws', async () => {
    const png = await makePng(64, 48, [90, 90, 200]);
    const bad = png.toString('base64').slice(0, 201); // a length no base64 can have
    const truncated = png.subarray(0, Math.floor(png.length / 2)).toString('base64');
    const notImage = Buffer.from('this is plain text pretending to be a screenshot '.repeat(20)).toString(
      'base64',
    );
    const bomb = bombHeader(png, 100_000, 100_000).toString('base64');
    const inputs = { bad, truncated, notImage, bomb };
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const outputs: unknown[] = [];
    const dispatch = recorder.wrap(async (_tool: string, args: Record<string, unknown>) => {
      const out = { sessionId: SID, ok: true, result: capture(inputs[args.kind as keyof typeof inputs]) };
      outputs.push(out);
      return out;
    });
    for (const kind of Object.keys(inputs)) {
      const value = await dispatch('capture', { sessionId: SID, kind });
      expect(value).toBe(outputs.at(-1)); // untouched
    }
    await recorder.close();
    const dir = onlyDir();
    const rows = calls(dir);
    expect(rows.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    const errors = rows.map((r) => JSON.parse(r.envelope!).result.artifactError as string);
    expect(errors[0]).toMatch(/^bad base64/);
    expect(errors[1]).toMatch(/truncated/);
    expect(errors[2]).toMatch(/not an image/);
    expect(errors[3]).toMatch(/too many pixels/);
    for (const r of rows) expect(JSON.parse(r.envelope!).result).toMatchObject({ kind: 'capture-summary' });
    const artifactRows = withLog(dir, (db) =>
      db.prepare('SELECT path, error FROM artifacts ORDER BY id').all(),
    ) as Array<{
      path: string | null;
      error: string | null;
    }>;
    expect(artifactRows).toHaveLength(4);
    expect(artifactRows.every((a) => a.path === null && a.error !== null)).toBe(true);
    expect(fs.existsSync(path.join(dir, 'artifacts'))).toBe(false);
    expectCleanLog(dir, [bad, truncated, bomb]);
  });

  it('writes one file per distinct image, computes blankCheck only when missing, flags declared sizes that lie', async () => {
    const black = await makePng(64, 48, [0, 0, 0], { uniform: true });
    const recorder = createRecorder({ sessionsDir: temp.dir });
    const dispatch = recorder.wrap(async (_tool: string, args: Record<string, unknown>) => ({
      sessionId: SID,
      ok: true,
      result:
        args.n === 3
          ? capture(black, {
              width: 100,
              bytes: black.length,
              blankCheck: { blank: false, dominantFraction: 0.2, dominantIsDark: false },
            })
          : capture(black, { bytes: black.length }),
    }));
    for (const n of [1, 2, 3]) await dispatch('capture', { sessionId: SID, n });
    await recorder.close();
    const dir = onlyDir();
    expect(fs.readdirSync(path.join(dir, 'artifacts'))).toHaveLength(1);
    const artifacts = withLog(dir, (db) => db.prepare('SELECT * FROM artifacts ORDER BY id').all()) as Array<
      Record<string, unknown>
    >;
    expect(new Set(artifacts.map((a) => a.path)).size).toBe(1);
    expect(artifacts.map((a) => a.sha256)).toEqual([sha256(black), sha256(black), sha256(black)]);
    const rows = calls(dir);
    // Computed with the server's algorithm for the first copy (none declared): uniform black is blank and dark.
    expect(JSON.parse(rows[0]!.envelope!).result.blankCheck).toEqual({
      blank: true,
      dominantFraction: 1,
      dominantIsDark: true,
    });
    // A declared blankCheck is kept as declared.
    expect(JSON.parse(rows[2]!.envelope!).result.blankCheck).toMatchObject({
      blank: false,
      dominantFraction: 0.2,
    });
    expect(rows[0]!.violations).toBeNull();
    expect(JSON.parse(rows[2]!.violations!)).toEqual([
      { path: '/result/width', message: 'declared width 100 but the image is 64 wide' },
    ]);
    expect(recorder.session(SID)?.counts).toMatchObject({ artifacts: 3, violations: 1 });
  });

  it('past maxArtifactBytes keeps the summary without a file and counts the omission in an event', async () => {
    const a = await makePng(64, 48, [200, 0, 0]);
    const b = await makePng(64, 48, [0, 200, 0]);
    const c = await makePng(64, 48, [0, 0, 200]);
    const recorder = createRecorder({ sessionsDir: temp.dir, limits: { maxArtifactBytes: a.length + 10 } });
    const images = [a, b, c];
    const dispatch = recorder.wrap(async (_tool: string, args: Record<string, unknown>) => ({
      sessionId: SID,
      ok: true,
      result: capture(images[args.n as number]!, { bytes: images[args.n as number]!.length }),
    }));
    for (const n of [0, 1, 2]) await dispatch('capture', { sessionId: SID, n });
    await recorder.close();
    const dir = onlyDir();
    const summaries = calls(dir).map((r) => JSON.parse(r.envelope!).result);
    expect(summaries[0].artifact).toMatch(/^artifacts\//);
    expect(summaries[1]).toMatchObject({ kind: 'capture-summary', width: 64, height: 48, bytes: b.length });
    expect(summaries[1].artifactError).toMatch(/over artifact budget/);
    expect(summaries[2].artifactError).toMatch(/over artifact budget/);
    expect(fs.readdirSync(path.join(dir, 'artifacts'))).toHaveLength(1);
    const limit = events(dir, 'artifact-limit');
    expect(limit).toHaveLength(1);
    expect(limit[0]!.data).toEqual({ omittedImages: 2, omittedBytes: b.length + c.length });
    expectEventsValid(dir);
    expectCleanLog(
      dir,
      images.map((i) => i.toString('base64')),
    );
  });
});

describe('maxLogBytes', () => {
  it('keeps a metadata row for every call, drops payloads past the limit and counts them in one event', async () => {
    const recorder = createRecorder({ sessionsDir: temp.dir, limits: { maxLogBytes: 4000 } });
    const filler = 'x'.repeat(300);
    const dispatch = recorder.wrap(async (_tool: string, args: Record<string, unknown>) =>
      (args.n as number) % 5 === 4
        ? {
            sessionId: SID,
            ok: false,
            error: { code: 'element-not-found', category: 'no-target', detail: filler },
          }
        : { sessionId: SID, ok: true, result: { filler } },
    );
    for (let n = 0; n < 30; n += 1) await dispatch('find', { sessionId: SID, n, filler });
    await recorder.close();
    const dir = onlyDir();
    const rows = calls(dir);
    expect(rows).toHaveLength(30);
    const dropped = rows.filter((r) => r.payload_dropped === 1);
    const kept = rows.filter((r) => r.payload_dropped === 0);
    expect(kept.length).toBeGreaterThan(2);
    expect(dropped.length).toBeGreaterThan(15);
    // Kept rows come first: the budget is spent in order.
    expect(Math.max(...kept.map((r) => r.seq))).toBeLessThan(Math.min(...dropped.map((r) => r.seq)));
    for (const r of dropped) {
      expect(r.envelope).toBeNull();
      expect(r.response).toBeNull();
      expect(r).toMatchObject({ tool: 'find', transport: 'wrap' });
      expect(r.status).toBe(r.seq % 5 === 0 ? 'failed' : 'ok');
      expect(r.ended_at).not.toBeNull();
      if (r.status === 'failed')
        expect(r).toMatchObject({ error_code: 'element-not-found', error_category: 'no-target' });
    }
    const stored = rows.reduce((n, r) => n + (r.args?.length ?? 0) + (r.envelope?.length ?? 0), 0);
    expect(stored).toBeLessThanOrEqual(4000);
    const truncation = events(dir, 'truncation');
    expect(truncation).toHaveLength(1);
    expect(truncation[0]!.data.omittedCalls).toBe(dropped.length);
    expect(truncation[0]!.data.omittedBytes).toBeGreaterThan(dropped.length * 300);
    expect(recorder.session(SID)?.counts.droppedPayloads).toBe(dropped.length);
    expectEventsValid(dir);
  });
});
