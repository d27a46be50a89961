/**
 * The one crash child: an agent process that records through the built package (`dist/`) until its parent
 * kills it with SIGKILL (see `killWhenReady` in crash.ts). Run with `node --import tsx`, forked with IPC:
 *
 *   crash-child.ts <scenario> <sessionsDir> [delayMs]
 *
 * Scenarios, each sending `{ kind: 'ready', ... }` once the state under test is committed:
 * - `in-flight`: a capture (a real PNG) and a find complete, a wait-for never answers; ready (with the MCEC
 *   session id) after `flush()`, so the call in flight is a pending row in the log.
 * - `steady`: a wait-for in flight, then finds every `delayMs` (default 2) for ever, each reported as
 *   `{ kind: 'done', n, at }` when it returned: the durability window is judged against those times.
 * - `captures`: ~13 MB inline captures back to back (each a new file), so most of its time goes into writing
 *   artifact files: a kill lands mid-write. Ready (with one capture's bytes) after the first one.
 */
import zlib from 'node:zlib';
import { type CrashChildMessage, IN_FLIGHT_SESSION_ID } from './crash.js';
import { noisePng, redPng } from './images.js';
import { callToolResult, findResult, NOTEPAD, SAVE_AS } from './mcec.js';

// The built package, as an agent would load it; typed from the sources it is built from.
const DIST_INDEX = new URL('../../dist/index.js', import.meta.url).href;
const { createRecorder } = (await import(DIST_INDEX)) as typeof import('../../src/index.js');

const [scenario, sessionsDir, delayArg] = process.argv.slice(2);
const tell = (m: CrashChildMessage) => process.send?.(m);
const never = () => new Promise<never>(() => {});

/** A capture (with its image), a find, then a wait-for that never answers. */
async function inFlight(): Promise<void> {
  const sessionId = IN_FLIGHT_SESSION_ID;
  const png = await redPng();
  const recorder = createRecorder({ sessionsDir, scenario: 'crash while waiting', stderr: () => {} });
  const dispatch = recorder.wrap(async (tool: string, _args: Record<string, unknown>) => {
    if (tool === 'capture') {
      const result = {
        width: 8,
        height: 8,
        encoding: 'png',
        bytes: png.length,
        base64: png.toString('base64'),
      };
      return callToolResult({ ok: true, sessionId, result }, png);
    }
    if (tool === 'wait-for') return never(); // the call stays in flight
    return callToolResult({ ok: true, sessionId, result: { found: true, element: null, window: null } });
  });
  await dispatch('capture', { sessionId, window: NOTEPAD.title });
  await dispatch('find', { sessionId, window: SAVE_AS.title, value: 'Save' });
  void dispatch('wait-for', { sessionId, window: SAVE_AS.title, value: 'Saved', timeout: 5000 });
  await recorder.flush();
  tell({ kind: 'ready', sessionId });
}

/** Finds at a steady rate, each reported with the time it returned, while a wait-for stays in flight. */
async function steady(delayMs: number): Promise<void> {
  const recorder = createRecorder({ sessionsDir, stderr: () => {} });
  const dispatch = recorder.wrap((tool: string, args: Record<string, unknown>) => {
    if (tool === 'wait-for') return never();
    return new Promise((resolve) => setTimeout(() => resolve(findResult(`item ${args.n}`)), delayMs));
  });
  void dispatch('wait-for', { window: SAVE_AS.title, timeout: 600_000 });
  await recorder.flush();
  tell({ kind: 'ready', sessionId: recorder.defaultSessionId });
  for (let n = 1; ; n++) {
    await dispatch('find', { n, window: NOTEPAD.title });
    tell({ kind: 'done', n, at: Date.now() });
  }
}

/** Large inline captures back to back, each a new artifact file. */
async function captures(): Promise<void> {
  const recorder = createRecorder({
    sessionsDir,
    stderr: () => {},
    limits: { maxArtifactBytes: 64 * 1024 * 1024 * 1024 },
  });
  // 2400 x 1800 of noise: ~13 MB per capture, as big compressed as raw.
  const png = await noisePng(2400, 1800, 7);
  const envelope = {
    ok: true,
    sessionId: null,
    result: { captured: true, width: 2400, height: 1800, format: 'png' },
  };
  const dispatch = recorder.wrap(async (_tool: string, args: Record<string, unknown>) =>
    callToolResult(envelope, numbered(png, Number(args.n ?? 0))),
  );
  await dispatch('capture', { window: NOTEPAD.title });
  await recorder.flush();
  tell({ kind: 'ready', sessionId: recorder.defaultSessionId, bytes: numbered(png, 0).length });
  for (let n = 1; ; n++) {
    await dispatch('capture', { window: NOTEPAD.title, n });
    // Wait for the queue so the next capture is written while this one's row commits: writes dominate.
    await recorder.flush();
  }
}

/** The PNG with a tEXt chunk naming capture `n` before IEND: every capture is a new file (artifacts are per sha256). */
function numbered(png: Buffer, n: number): Buffer {
  const text = Buffer.from(`mcec\0${String(n).padStart(8, '0')}`, 'latin1');
  const chunk = Buffer.alloc(12 + text.length);
  chunk.writeUInt32BE(text.length, 0);
  chunk.write('tEXt', 4, 'latin1');
  text.copy(chunk, 8);
  chunk.writeUInt32BE(zlib.crc32(chunk.subarray(4, 8 + text.length)) >>> 0, 8 + text.length);
  return Buffer.concat([png.subarray(0, png.length - 12), chunk, png.subarray(png.length - 12)]);
}

if (scenario === 'in-flight') await inFlight();
else if (scenario === 'steady') await steady(Number(delayArg ?? 2));
else if (scenario === 'captures') await captures();
else throw new Error(`crash-child: unknown scenario ${scenario}`);
// Stay alive (the wait-for's promise holds no handle) until the parent's SIGKILL.
setInterval(() => {}, 1000);
