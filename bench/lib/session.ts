/**
 * A big realistic session recorded through the recorder itself: N calls of small MCEC results (finds,
 * queries, clicks, a failure now and then) with a capture of a distinct screenshot every N/captures calls.
 */
import { createRecorder, type Dispatch } from '../../src/record/index.js';
import { type CallToolResult, captureCallToolResult, screenshotPng, smallResults } from './fixtures.js';

export interface RecordedSession {
  sessionsDir: string;
  sessionId: string;
  calls: number;
  captures: number;
  pngBytes: number;
}

/** Record `calls` calls with `captures` distinct screenshots (width x height) into `sessionsDir`. */
export async function recordBigSession(
  sessionsDir: string,
  calls: number,
  captures: number,
  size: { width: number; height: number } = { width: 800, height: 600 },
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
    if (tool === 'capture') return captureCallToolResult(pngs[captured++]!, size.width, size.height);
    return tool === 'find-fail' ? findFailed : (find as CallToolResult);
  };
  const wrapped = recorder.wrap(dispatch);
  const inFlight: Array<Promise<unknown>> = [];
  for (let i = 0; i < calls; i++) {
    const tool =
      i % every === every - 1 && captured < captures ? 'capture' : i % 97 === 0 ? 'find-fail' : 'find';
    inFlight.push(wrapped(tool, { window: 'Untitled - Notepad', value: `item ${i}` }));
    if (inFlight.length >= 16) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
  await recorder.end(recorder.defaultSessionId, { passed: false, reason: 'bench: the last save failed' });
  await recorder.close();
  return {
    sessionsDir,
    sessionId: recorder.defaultSessionId,
    calls,
    captures: captured,
    pngBytes: pngs.reduce((n, p) => n + p.length, 0),
  };
}
