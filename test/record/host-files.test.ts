/**
 * Evidence that exists only as files on the MCEC host, end to end: path-only captures made by the simulator
 * (which writes real files) recorded through `wrap` and through the HTTP proxy, copied into the session,
 * summarized, put into report.html and the bundle (read back, `unzip -t`); win32 host paths through a
 * `hostPathMap`, and where a file lies when it cannot be copied.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle } from '../../src/bundle/index.js';
import { validateCaptureSummary } from '../../src/contract/validate.js';
import { createRecorder, type RecorderOptions } from '../../src/record/index.js';
import { failureSummaryText, summarizeSession } from '../../src/sessions/summarize.js';
import { createSimulator, envelopeOf } from '../../src/sim/index.js';
import type { ArtifactRow } from '../../src/store/schema.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { readZip, unzipTest } from '../bundle/helpers.js';
import { post, waitFor } from '../proxy/helpers.js';
import { solidGif } from '../support/images.js';
import { simBehindHttpProxy } from '../support/sim-http-proxy.js';
import { calls, callToolResult, makePng, sessionDirs, tempDir } from './helpers.js';

let root: string;
let simRoot: string;
beforeEach(() => {
  root = tempDir();
  simRoot = tempDir();
});
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(simRoot, { recursive: true, force: true });
});

function artifactRows(dir: string): ArtifactRow[] {
  const reader = SessionReader.open(dir);
  try {
    return reader.artifacts();
  } finally {
    reader.close();
  }
}

function sessionDir(id: string): string {
  return path.join(root, sessionDirs(root).find((d) => d.endsWith(id))!);
}

/** Bundle a session, verify it, `unzip -t` it and read every entry back. */
async function bundleAndRead(dir: string) {
  const res = await buildBundle(dir);
  const check = await verifyBundle(res.bundle);
  expect(check.problems).toEqual([]);
  expect(unzipTest(res.bundle)).toContain('No errors detected');
  const entries = await readZip(res.bundle);
  return { res, entries, byName: (suffix: string) => entries.find((e) => e.name.endsWith(suffix)) };
}

describe('path-only captures made by the simulator, through wrap', () => {
  it('are copied into the session, referenced, summarized and bundled as images', async () => {
    const sim = createSimulator({ seed: 7, sessionsRoot: simRoot });
    const recorder = createRecorder({ sessionsDir: root, stderr: () => {} });
    const outputs: unknown[] = [];
    const call = recorder.wrap(async (tool: string, args: Record<string, unknown>) => {
      const out = await sim.callTool(tool, args);
      outputs.push(structuredClone(out));
      return out;
    });
    const sessionId = envelopeOf((await call('session-start', {})) as never).sessionId!;
    const s = { sessionId };
    const shot = (await call('capture', { ...s, window: 'Untitled - Notepad', pathOnly: true })) as never;
    const hostPath = envelopeOf(shot).result!.artifact as string;
    const saved = path.join(simRoot, 'also-saved.png');
    await call('capture', { ...s, window: 'Administrator: Command Prompt', pathOnly: true, file: saved });
    // Fails with the server's own observation naming the same files again.
    await call('find', { ...s, window: 'Save As', value: 'Save' });
    // An inline capture also saved to a file: one image, two rows.
    await call('capture', { ...s, window: 'Untitled - Notepad', file: path.join(simRoot, 'inline.png') });
    await recorder.close();

    // The agent got exactly what the server sent: copying happens in the queue, never in the answer.
    expect(JSON.stringify(shot)).toBe(JSON.stringify(outputs[1]));
    expect(JSON.stringify(shot)).not.toContain('artifactCopy');

    const dir = sessionDir(sessionId);
    const rows = artifactRows(dir);
    expect(rows.map((r) => [r.call_seq, r.role, r.json_path, r.error])).toEqual([
      [2, 'host-capture', '/result/artifact', null],
      [3, 'host-capture', '/result/artifact', null],
      [3, 'host-capture-file', '/result/file', null],
      [4, 'host-observation', '/error/lastObservation/artifact', null],
      [4, 'host-observation', '/error/lastObservation/file', null],
      [5, 'result', '/result/base64', null],
      [5, 'host-capture-file', '/result/file', null],
      [5, 'image-block', '/content/0/data', null],
    ]);
    expect(new Set(rows.slice(5).map((r) => r.path))).toEqual(new Set([rows[0]!.path]));
    expect(rows[0]!.host_path).toBe(hostPath);
    expect(rows[2]!.host_path).toBe(saved);
    // One file per distinct image: the path-only copy and the `file` copy of the second capture are one.
    expect(fs.readdirSync(path.join(dir, 'artifacts')).sort()).toEqual(
      [rows[0]!.path!, rows[1]!.path!].map((p) => path.basename(p)).sort(),
    );
    expect(rows[2]!.path).toBe(rows[1]!.path);
    expect(rows[4]!.path).toBe(rows[1]!.path);
    const copy = fs.readFileSync(path.join(dir, rows[0]!.path!));
    expect(copy).toEqual(fs.readFileSync(hostPath));
    const meta = await sharp(copy).metadata();
    expect([rows[0]!.width, rows[0]!.height, rows[0]!.format]).toEqual([meta.width, meta.height, 'png']);
    // The server declared a blankCheck: it is the one kept.
    expect(JSON.parse(rows[0]!.blank_check!)).toEqual(envelopeOf(shot).result!.blankCheck);

    // The stored envelope keeps the host path and points at the copy.
    const stored = calls(dir).map((c) => JSON.parse(c.envelope!));
    expect(stored[1].result).toMatchObject({ artifact: hostPath, artifactCopy: rows[0]!.path });
    // The server keeps a path-only observation as is (no kind): both of its paths point at the one copy.
    expect(stored[3].error.lastObservation).toMatchObject({
      artifactCopy: rows[1]!.path,
      fileCopy: rows[1]!.path,
    });
    // The recorder's own capture summary with a host `file` keeps the schema's shape.
    expect(stored[4].result).toMatchObject({
      kind: 'capture-summary',
      artifact: rows[0]!.path,
      fileCopy: rows[0]!.path,
    });
    expect(validateCaptureSummary(stored[4].result).violations).toEqual([]);

    const summary = await summarizeSession(dir);
    expect(summary.hostFiles).toEqual({ total: 4, copied: 4, notCopied: [], omitted: 0 });
    expect(summary.lastGoodObservation?.image?.artifact).toBe(rows[1]!.path); // before the failing find

    // Done when: a path-only capture made by the simulator lands in the bundle as an image.
    const { entries, byName } = await bundleAndRead(dir);
    const inZip = byName(`/${rows[0]!.path}`)!;
    expect(inZip.data).toEqual(fs.readFileSync(hostPath));
    expect((await sharp(inZip.data).metadata()).format).toBe('png');
    const html = byName('/report.html')!.data.toString('utf8');
    expect(html).toContain(`href="artifacts/${path.basename(rows[0]!.path!)}"`);
    expect(html).toContain('data:image/webp;base64,');
    const session = JSON.parse(byName('/session.json')!.data.toString('utf8'));
    expect(session.artifacts).toEqual(expect.arrayContaining([rows[0]!.path, rows[1]!.path]));
    expect(entries.filter((e) => e.name.includes('/artifacts/'))).toHaveLength(2);
  });

  it('a record GIF stays a GIF, and a blank path-only capture is the suspect image', async () => {
    const sim = createSimulator({ seed: 7, sessionsRoot: simRoot });
    const recorder = createRecorder({ sessionsDir: root, stderr: () => {} });
    const call = recorder.wrap((tool, args) => sim.callTool(tool, args));
    const sessionId = envelopeOf((await call('session-start', {})) as never).sessionId!;
    const gifPath = path.join(simRoot, 'run.gif');
    const rec = envelopeOf(
      (await call('record', {
        sessionId,
        action: 'oneshot',
        window: 'Untitled - Notepad',
        durationMs: 300,
        fps: 10,
        file: gifPath,
      })) as never,
    );
    expect(rec.ok).toBe(true);
    const blank = envelopeOf(
      (await call('capture', { sessionId, window: 'Video Player', pathOnly: true })) as never,
    );
    expect(blank.ok).toBe(false);
    await recorder.close();

    const dir = sessionDir(sessionId);
    const rows = artifactRows(dir);
    const gifRow = rows.find((r) => r.role === 'host-recording')!;
    expect(gifRow).toMatchObject({ format: 'gif', host_path: gifPath, error: null, blank_check: null });
    expect(gifRow.path).toMatch(/^artifacts\/recording-.*\.gif$/);
    expect(fs.readFileSync(path.join(dir, gifRow.path!))).toEqual(fs.readFileSync(gifPath));
    const suspectRow = rows.find((r) => r.json_path === '/error/partialResult/artifact')!;
    expect(suspectRow).toMatchObject({ role: 'host-capture', format: 'png', error: null });

    const summary = await summarizeSession(dir);
    expect(summary.suspectImage?.artifact).toBe(suspectRow.path);
    const { byName } = await bundleAndRead(dir);
    expect(byName(`/${gifRow.path}`)!.data).toEqual(fs.readFileSync(gifPath));
    const html = byName('/report.html')!.data.toString('utf8');
    expect(html).toContain(`href="artifacts/${path.basename(gifRow.path!)}"`);
    expect(html).toContain('a GIF recording: open it to play');
  });

  it('with copying off, keeps the paths and says where the files lie', async () => {
    const sim = createSimulator({ seed: 7, sessionsRoot: simRoot });
    const recorder = createRecorder({ sessionsDir: root, stderr: () => {}, copyHostFiles: false });
    const call = recorder.wrap((tool, args) => sim.callTool(tool, args));
    const sessionId = envelopeOf((await call('session-start', {})) as never).sessionId!;
    await call('capture', { sessionId, window: 'Untitled - Notepad', pathOnly: true });
    await recorder.close();
    const dir = sessionDir(sessionId);
    expect(artifactRows(dir)).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'artifacts'))).toBe(false);
  });
});

describe('win32 host paths', () => {
  /** Real files where the MCEC host's `C:\mcec\sessions\<dir>` is readable from here. */
  async function hostTree() {
    const mount = path.join(simRoot, 'mnt-mcec');
    const sub = '20261202-101500-5f19c9c01a3f';
    fs.mkdirSync(path.join(mount, sub), { recursive: true });
    const png = await makePng(96, 64, [20, 120, 200]);
    const gif = await solidGif(48, 32, '#c02020');
    fs.writeFileSync(path.join(mount, sub, 'capture-20261202-101501123-1.png'), png);
    fs.writeFileSync(path.join(mount, sub, 'rec-1.gif'), gif);
    const win = `C:\\mcec\\sessions\\${sub}`;
    return {
      mount,
      png,
      gif,
      capture: `${win}\\capture-20261202-101501123-1.png`,
      recording: `${win}\\rec-1.gif`,
    };
  }

  /** A dispatch answering like MCEC with host paths: a path-only capture, a record stop, a failing capture. */
  function mcecLike(t: Awaited<ReturnType<typeof hostTree>>) {
    return async (tool: string, _args: Record<string, unknown>): Promise<unknown> => {
      const sessionId = '5f19c9c01a3f';
      if (tool === 'capture')
        return callToolResult({
          ok: true,
          sessionId,
          result: {
            handle: 1,
            width: 96,
            height: 64,
            encoding: 'png',
            bytes: t.png.length,
            artifact: t.capture,
          },
        });
      if (tool === 'record')
        return callToolResult({
          ok: true,
          sessionId,
          result: {
            frames: 1,
            durationMs: 100,
            fps: 10,
            width: 48,
            height: 32,
            bytes: t.gif.length,
            file: t.recording,
          },
        });
      return callToolResult({
        ok: false,
        sessionId,
        error: {
          code: 'window-not-found',
          category: 'no-target',
          detail: 'no window',
          lastObservation: {
            kind: 'capture-summary',
            width: 96,
            height: 64,
            encoding: 'png',
            bytes: 1,
            artifact: t.capture,
          },
        },
      });
    };
  }

  /** A capture, a recording's stop and a failing click recorded around `mcecLike(t)`; the session's dir. */
  async function recordCaptureRecordingClick(
    t: Awaited<ReturnType<typeof hostTree>>,
    hostPathMap?: RecorderOptions['hostPathMap'],
  ): Promise<string> {
    const recorder = createRecorder({
      sessionsDir: root,
      stderr: () => {},
      ...(hostPathMap ? { hostPathMap } : {}),
    });
    const call = recorder.wrap(mcecLike(t));
    await call('capture', {});
    await call('record', { action: 'stop' });
    await call('click', {});
    await recorder.close();
    return sessionDir('5f19c9c01a3f');
  }

  it('are copied through --host-path-map; the GIF stays a GIF and is linked from report.html', async () => {
    const t = await hostTree();
    const dir = await recordCaptureRecordingClick(t, [{ from: 'c:/MCEC/sessions', to: t.mount }]);
    const rows = artifactRows(dir);
    expect(rows.map((r) => [r.role, r.format, r.error, r.host_path])).toEqual([
      ['host-capture', 'png', null, t.capture],
      ['host-recording', 'gif', null, t.recording],
      ['host-observation', 'png', null, t.capture],
    ]);
    expect(rows[1]!.path).toMatch(/^artifacts\/recording-.*\.gif$/);
    expect(rows[1]!.blank_check).toBeNull();
    expect(rows[0]!.blank_check).not.toBeNull(); // none declared: computed

    const { byName } = await bundleAndRead(dir);
    expect(byName(`/${rows[1]!.path}`)!.data).toEqual(t.gif);
    expect(byName(`/${rows[0]!.path}`)!.data).toEqual(t.png);
    const html = byName('/report.html')!.data.toString('utf8');
    const gifName = path.basename(rows[1]!.path!);
    expect(html).toContain(`href="artifacts/${gifName}"`);
    expect(html).toContain('a GIF recording: open it to play');
    expect(html).not.toMatch(/data:image\/gif/);
  });

  it('not readable here: the summary, the bug bundle and report.html say where each lies on the MCEC host', async () => {
    const t = await hostTree();
    const dir = await recordCaptureRecordingClick(t);
    const rows = artifactRows(dir);
    expect(rows.every((r) => r.path === null && r.error?.startsWith('not readable from this machine'))).toBe(
      true,
    );
    const text = await failureSummaryText(dir);
    expect(text).toContain('## Evidence on the MCEC host');
    expect(text).toContain('0 of 2 files the server wrote on its host');
    expect(text).toContain(`on the MCEC host at \`${t.capture}\``);
    expect(text).toContain(`on the MCEC host at \`${t.recording}\``);
    expect(text).toContain(`Its image is on the MCEC host at \`${t.capture}\` (not copied here).`);
    const { byName } = await bundleAndRead(dir);
    expect(byName('/failure-summary.md')!.data.toString('utf8')).toContain(
      `on the MCEC host at \`${t.capture}\``,
    );
    const html = byName('/report.html')!.data.toString('utf8');
    expect(html).toContain('host-recording: on the MCEC host at C:\\mcec\\sessions\\');
    expect(html).toContain('2 of 2 files the server wrote on the MCEC host could not be copied here');
  });
});

describe('through the HTTP proxy', () => {
  it('a path-only capture lands in the bundle as an image', async () => {
    const recorder = createRecorder({ sessionsDir: root, transport: 'http', stderr: () => {} });
    const rig = await simBehindHttpProxy(simRoot, { seed: 7, recorder });
    try {
      const rpc = async (id: number, name: string, args: Record<string, unknown>) => {
        const answer = await post(
          rig.url,
          JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }),
          { accept: 'application/json, text/event-stream' },
        );
        expect(answer.status).toBe(200);
        return envelopeOf(JSON.parse(answer.body.toString('utf8')).result);
      };
      const sessionId = (await rpc(1, 'session-start', {})).sessionId!;
      const env = await rpc(2, 'capture', { sessionId, window: 'Untitled - Notepad', pathOnly: true });
      const hostPath = env.result!.artifact as string;
      await rpc(3, 'session-end', { sessionId });
      await rig.close();
      const dir = sessionDir(sessionId);
      const rows = artifactRows(dir);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        role: 'host-capture',
        host_path: hostPath,
        format: 'png',
        error: null,
      });
      const { byName } = await bundleAndRead(dir);
      const image = byName(`/${rows[0]!.path}`)!.data;
      expect(image).toEqual(fs.readFileSync(hostPath));
      expect((await sharp(image).metadata()).width).toBe(rows[0]!.width);
    } finally {
      await rig.close();
    }
  });
});

describe('mcec-record flags (the built CLI, stdio mode, the simulator as the server)', () => {
  const ROOT = fileURLToPath(new URL('../../', import.meta.url));
  const RECORD_CLI = path.join(ROOT, 'dist/cli/mcec-record.js');
  const SIM_CHILD = fileURLToPath(new URL('../proxy/fixtures/sim-stdio.mjs', import.meta.url));

  /** Run session-start and a path-only capture through `mcec-record stdio <flags>`; the session's artifact rows. */
  async function recordThroughCli(
    flags: string[],
  ): Promise<{ code: number | null; rows: ArtifactRow[]; err: string }> {
    const rec = path.join(root, 'rec');
    const child = spawn(
      process.execPath,
      [RECORD_CLI, 'stdio', '--sessions', rec, ...flags, '--', process.execPath, SIM_CHILD, simRoot],
      { cwd: root },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString('utf8');
    });
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    const send = async (id: number, name: string, args: Record<string, unknown>) => {
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })}\n`,
      );
      await waitFor(() => out.split('\n').filter(Boolean).length >= id, 15_000);
      return envelopeOf(JSON.parse(out.split('\n').filter(Boolean)[id - 1]!).result);
    };
    if (!flags.includes('bad')) {
      const sessionId = (await send(1, 'session-start', {})).sessionId!;
      await send(2, 'capture', { sessionId, window: 'Untitled - Notepad', pathOnly: true });
    }
    child.stdin.end();
    const code = await closed;
    const dirs = fs.existsSync(rec) ? sessionDirs(rec) : [];
    const rows = dirs.flatMap((d) => artifactRows(path.join(rec, d)));
    return { code, rows, err };
  }

  it('--host-path-map is used before a direct read; --no-host-files copies nothing; a bad map is exit 2', async () => {
    // Mapped to an empty folder: the sim's file is looked for there (and not found), proving the map applies.
    const empty = path.join(root, 'empty');
    fs.mkdirSync(empty);
    const mapped = await recordThroughCli(['--host-path-map', `${simRoot}=${empty}`]);
    expect(mapped.code).toBe(0);
    expect(mapped.rows.map((r) => [r.role, r.path, r.error])).toEqual([
      ['host-capture', null, 'not found from this machine'],
    ]);
    fs.rmSync(path.join(root, 'rec'), { recursive: true });

    const off = await recordThroughCli(['--no-host-files']);
    expect(off.code).toBe(0);
    expect(off.rows).toEqual([]);
    fs.rmSync(path.join(root, 'rec'), { recursive: true });

    const plain = await recordThroughCli([]);
    expect(plain.rows.map((r) => [r.role, r.format, r.error])).toEqual([['host-capture', 'png', null]]);

    const bad = await recordThroughCli(['--host-path-map', 'bad']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--host-path-map must be FROM=TO, got "bad"');
  });
});
