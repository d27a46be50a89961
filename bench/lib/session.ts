/**
 * A big realistic session recorded through the recorder itself: N calls of small MCEC results (finds,
 * queries, clicks, a failure now and then) with a capture of a distinct screenshot every N/captures calls.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRecorder, type Dispatch } from '../../src/record/index.js';
import { SessionReader } from '../../src/store/session-reader.js';
import { type CallToolResult, captureCallToolResult, screenshotPng, smallResults } from './fixtures.js';

export interface RecordedSession {
  sessionsDir: string;
  sessionId: string;
  /** The session dir that holds the calls. */
  dir: string;
  calls: number;
  captures: number;
  pngBytes: number;
}

/**
 * Record `calls` calls with `captures` distinct screenshots (width x height) into `sessionsDir`. A capture
 * takes `captureMs` (MCEC's take 50-200 ms; 0: at once), so thumbnails are made at a capture's pace.
 */
export async function recordBigSession(
  sessionsDir: string,
  calls: number,
  captures: number,
  size: { width: number; height: number } = { width: 800, height: 600 },
  captureMs = 0,
): Promise<RecordedSession> {
  const { find, findFailed } = await smallResults();
  const pngs: Buffer[] = [];
  for (let i = 0; i < captures; i++) pngs.push(await screenshotPng(size.width, size.height, 1000 + i));
  const every = Math.max(1, Math.floor(calls / Math.max(1, captures)));
  const recorder = createRecorder({
    sessionsDir,
    scenario: 'bench: save a file in Notepad',
    stderr: () => {},
  });
  let captured = 0;
  const dispatch: Dispatch = async (tool) => {
    if (tool === 'capture') {
      const png = pngs[captured++]!;
      if (captureMs > 0) await new Promise((resolve) => setTimeout(resolve, captureMs));
      return captureCallToolResult(png, size.width, size.height);
    }
    return tool === 'find-fail' ? findFailed : (find as CallToolResult);
  };
  const wrapped = recorder.wrap(dispatch);
  const inFlight: Array<Promise<unknown>> = [];
  for (let i = 0; i < calls; i++) {
    const tool =
      i % every === every - 1 && captured < captures ? 'capture' : i % 97 === 0 ? 'find-fail' : 'find';
    inFlight.push(wrapped(tool, { window: 'Untitled - Notepad', value: `item ${i}` }));
    if (inFlight.length >= 16 || tool === 'capture') await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
  await recorder.end(recorder.defaultSessionId, { passed: false, reason: 'bench: the last save failed' });
  await recorder.close();
  // The simulator's envelopes name its session, so calls may land there rather than in the default one.
  const dir = biggestSession(sessionsDir);
  const reader = SessionReader.open(dir);
  const sessionId = reader.session().session_id;
  reader.close();
  return {
    sessionsDir,
    sessionId,
    dir,
    calls,
    captures: captured,
    pngBytes: pngs.reduce((n, p) => n + p.length, 0),
  };
}

/** The session dir under `sessionsDir` whose log holds the most calls. */
function biggestSession(sessionsDir: string): string {
  let best = { dir: '', calls: -1 };
  for (const name of fs.readdirSync(sessionsDir)) {
    const dir = path.join(sessionsDir, name);
    if (!fs.existsSync(path.join(dir, 'session.sqlite'))) continue;
    const reader = SessionReader.open(dir);
    const calls = reader.callCount();
    reader.close();
    if (calls > best.calls) best = { dir, calls };
  }
  if (!best.dir) throw new Error(`no session recorded under ${sessionsDir}`);
  return best.dir;
}
