/**
 * The smaller holes of the adversarial pass, each through the real recorder, the real files and the built CLI:
 * a result that throws when read, server clocks out of range, kill -9 during a capture write, control and
 * bidi characters in recorded text, and `-o` pointed into a session dir.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { verifyBundle } from '../../src/bundle/verify.js';
import { createRecorder } from '../../src/record/index.js';
import { UNREADABLE_RESULT } from '../../src/record/recorder.js';
import { listSessionSummaries } from '../../src/sessions/list.js';
import { pruneSessions } from '../../src/sessions/prune.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { killWhenReady } from '../support/crash.js';
import { bundleCli, realPng, removeRoot, reportFigure, sessionDirOf, tempRoot, zipFiles } from './helpers.js';

const PNG_SIGNATURE = Buffer.from('89504e470d0a1a0a', 'hex');
const PNG_IEND = Buffer.from('0000000049454e44ae426082', 'hex');
/** C1 controls (U+009B is CSI on some terminals) and bidi overrides and isolates. */
const UNSAFE = /[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/;

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) removeRoot(r);
});

function root(): { root: string; sessionsDir: string } {
  const r = tempRoot();
  roots.push(r.root);
  return r;
}

/** A session-start CallToolResult as MCEC sends it. */
function sessionStart(sessionId: string, startedAt: string): Record<string, unknown> {
  const envelope = { ok: true, sessionId: null, result: { sessionId, startedAt, artifactDir: 'C:\\x' } };
  return { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: false };
}

const ok = (result: unknown) => ({
  content: [{ type: 'text', text: JSON.stringify({ ok: true, sessionId: null, result }) }],
  isError: false,
});

describe('a result that throws when read', () => {
  it('goes back to the agent as returned, and the call is recorded with a stand-in', async () => {
    const { sessionsDir } = root();
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const getter = {
      get ok(): boolean {
        throw new Error('getter');
      },
      get content(): unknown {
        throw new Error('getter');
      },
    };
    // Every property but `then` throws (a `then` that throws would reject the dispatch's own promise).
    const trap = new Proxy(
      {},
      {
        get: (_t, key) => {
          if (key === 'then') return undefined;
          throw new Error('trap');
        },
        has: () => {
          throw new Error('trap');
        },
        ownKeys: () => {
          throw new Error('trap');
        },
        getPrototypeOf: () => {
          throw new Error('trap');
        },
      },
    );
    const wrapped = recorder.wrap(async (tool: string, _args: Record<string, unknown>) =>
      tool === 'getter' ? getter : trap,
    );
    expect(await wrapped('getter', {})).toBe(getter);
    expect(await wrapped('trap', {})).toBe(trap);
    await recorder.close();
    const [dir] = fs.readdirSync(sessionsDir);
    const reader = SessionReader.open(path.join(sessionsDir, dir!));
    try {
      const rows = [...reader.calls()];
      expect(rows.map((r) => [r.tool, r.status === 'pending'])).toEqual([
        ['getter', false],
        ['trap', false],
      ]);
      expect(rows.every((r) => (r.response ?? '').includes(UNREADABLE_RESULT))).toBe(true);
    } finally {
      reader.close();
    }
  });
});

describe('server times out of range', () => {
  it('name sessions by our clock, so list, bundle and prune see them; the raw value stays in the log', async () => {
    const { sessionsDir } = root();
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const starts: Record<string, string> = {
      a1b2c3d4e5f6: '+275760-09-13T00:00:00.000Z',
      b1b2c3d4e5f6: '1970-01-01T00:00:00.000Z',
      c1b2c3d4e5f6: '-000001-01-01T00:00:00.000Z',
    };
    const wrapped = recorder.wrap(async (tool: string, args: Record<string, unknown>) =>
      tool === 'session-start'
        ? sessionStart(String(args.id), starts[String(args.id)]!)
        : ok({ found: true }),
    );
    const before = Date.now();
    for (const id of Object.keys(starts)) {
      await wrapped('session-start', { id });
      await wrapped('find', { sessionId: id, window: 'Notepad' });
      await recorder.end(id, { passed: true });
    }
    await recorder.close();
    const listed = await listSessionSummaries(sessionsDir);
    expect(listed.map((l) => l.id).sort()).toEqual(Object.keys(starts));
    for (const l of listed) {
      expect(l.error).toBeUndefined();
      expect(Date.parse(l.startedAt!)).toBeGreaterThanOrEqual(before - 1000);
      expect(l.durationMs!).toBeLessThan(60_000); // not "20789 d"
      const res = await buildBundle(l.dir);
      expect((await verifyBundle(res.bundle)).problems).toEqual([]);
      const reader = SessionReader.open(l.dir);
      try {
        const start = [...reader.calls()].find((r) => r.tool === 'session-start')!;
        expect(start.envelope ?? start.response).toContain(starts[l.id]!.slice(0, 7));
      } finally {
        reader.close();
      }
    }
    const pruned = await pruneSessions(sessionsDir, {
      olderThanMs: 0,
      recentMs: 0, // just written: only the clock question is under test
      dryRun: true,
      now: new Date(Date.now() + 1000),
    });
    expect(pruned.map((p) => path.basename(p.dir).slice(16)).sort()).toEqual(Object.keys(starts));
  });
});

describe('kill -9 during a capture write', () => {
  /** Start the capture child, kill it `afterMs` after its first capture is recorded; returns one capture's bytes. */
  async function captureAndKill(sessionsDir: string, afterMs: number): Promise<number> {
    const child = await killWhenReady('captures', sessionsDir, { delayMs: afterMs });
    return child.ready.bytes!;
  }

  it('never leaves a short image under an artifact name, and a bundle takes only files the log names', async () => {
    // Eight kills, so some land mid-write (a `.partial` is left): the old writer left a short PNG there.
    for (const afterMs of [150, 240, 320, 410, 470, 550, 610, 830]) {
      const { sessionsDir } = root();
      const bytes = await captureAndKill(sessionsDir, afterMs);
      const [dir] = fs.readdirSync(sessionsDir).map((d) => path.join(sessionsDir, d));
      const artifacts = path.join(dir!, 'artifacts');
      const named = fs.readdirSync(artifacts).filter((f) => /^capture-.*\.png$/.test(f));
      // A `.partial` left behind means the kill landed mid-write (where a short named PNG used to be left).
      const partial = fs.readdirSync(artifacts).filter((f) => f.endsWith('.partial')).length;
      reportFigure('capture-kill', { afterMs, whole: named.length, partial });
      expect(named.length).toBeGreaterThan(0);
      for (const f of named) {
        const data = fs.readFileSync(path.join(artifacts, f));
        expect(data.length, `${f} after a kill at ${afterMs} ms`).toBe(bytes);
        expect(data.subarray(0, 8).equals(PNG_SIGNATURE) && data.subarray(-12).equals(PNG_IEND)).toBe(true);
      }
      const res = await buildBundle(dir!);
      expect((await verifyBundle(res.bundle)).problems).toEqual([]);
    }
  }, 240_000);

  it('leaves out of the bundle a file no artifact row names (a cut-off write), saying so', async () => {
    const { sessionsDir } = root();
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const png = await realPng(64, 48);
    const wrapped = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      content: [
        { type: 'image', data: png.toString('base64'), mimeType: 'image/png' },
        { type: 'text', text: JSON.stringify({ ok: true, sessionId: null, result: { captured: true } }) },
      ],
      isError: false,
    }));
    await wrapped('capture', { window: 'Notepad' });
    await recorder.close();
    const [dir] = fs.readdirSync(sessionsDir).map((d) => path.join(sessionsDir, d));
    // What kill -9 left before artifacts were written through a temp file: a 0-byte image no row names.
    fs.writeFileSync(path.join(dir!, 'artifacts', 'capture-20261202-101500123-9.png'), '');
    const res = await buildBundle(dir!);
    expect(res.dropped).toEqual([
      {
        path: 'artifacts/capture-20261202-101500123-9.png',
        bytes: 0,
        reason: 'no-row',
        detail: 'no artifact row names it',
      },
    ]);
    const names = [...zipFiles(res.bundle).keys()];
    expect(names.filter((n) => n.endsWith('.png'))).toHaveLength(1);
    expect((await verifyBundle(res.bundle)).problems).toEqual([]);
  });
});

describe('control and bidi characters in recorded text', () => {
  it('reach neither the terminal nor report.html nor the Markdown as themselves', async () => {
    const { sessionsDir } = root();
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const hostile = 'Save\u202eexe.txt\u009b31m\u2066x\u2069\u0085';
    const wrapped = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      content: [
        {
          type: 'text',
          text: JSON.stringify({
            ok: false,
            sessionId: null,
            error: { code: `element-not-found${hostile}`, category: 'target', detail: hostile },
          }),
        },
      ],
      isError: true,
    }));
    await wrapped(`find${hostile}`, { window: hostile, value: hostile });
    const id = recorder.defaultSessionId;
    await recorder.close();
    const show = bundleCli(['show', id, '--sessions', sessionsDir]);
    expect(show.status).toBe(0);
    expect(show.stdout).toContain('element-not-found');
    expect(show.stdout).not.toMatch(UNSAFE);
    const list = bundleCli(['list', '--json', '--sessions', sessionsDir]);
    expect(list.stdout).not.toMatch(UNSAFE);
    const res = await buildBundle(sessionDirOf(sessionsDir, id));
    const files = zipFiles(res.bundle);
    for (const [name, data] of files) {
      if (!/\.(html|md)$/.test(name)) continue;
      expect(data.toString('utf8'), name).not.toMatch(UNSAFE);
    }
    const page = [...files].find(([n]) => n.endsWith('report.html'))![1].toString('utf8');
    expect(page).toContain('\\u202e'); // shown, not obeyed
  });
});

describe('-o inside a session dir', () => {
  it('is refused with exit 2 and the log untouched', async () => {
    const { sessionsDir } = root();
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    await recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ok({ found: true }))(
      'find',
      { window: 'Notepad' },
    );
    const id = recorder.defaultSessionId;
    await recorder.close();
    const dir = sessionDirOf(sessionsDir, id);
    const log = path.join(dir, 'session.sqlite');
    const before = fs.readFileSync(log);
    const filesBefore = fs.readdirSync(dir).sort();
    for (const out of [log, dir, path.join(dir, 'bug.zip'), path.join(dir, 'new', 'b.zip')]) {
      const res = bundleCli([id, '-o', out, '--sessions', sessionsDir]);
      expect(res.status, out).toBe(2);
      // A dir that does not exist yet is refused as such before anything else.
      if (!out.includes(`${path.sep}new${path.sep}`))
        expect(res.stderr).toContain(`is inside the session dir ${fs.realpathSync(dir)}`);
    }
    expect(fs.readFileSync(log).equals(before)).toBe(true);
    expect(fs.readdirSync(dir).sort()).toEqual(filesBefore);
    const elsewhere = bundleCli([
      id,
      '-o',
      path.join(sessionsDir, '..', 'bug.zip'),
      '--sessions',
      sessionsDir,
    ]);
    expect(elsewhere.status).toBe(0);
  });
});
