/** A session recorded through the real recorder whose calls are captures answering real PNGs. */
import fs from 'node:fs';
import path from 'node:path';
import { createRecorder } from '../../src/record/index.js';

/**
 * Record one `capture` call per PNG of `pngs` (each answered as MCP does: an image block and MCEC's envelope)
 * into `sessionsDir`, with the arguments `argsOf(i)`; the session's id and dir once the recorder closed.
 */
export async function recordCaptureRun(
  sessionsDir: string,
  pngs: readonly Buffer[],
  argsOf: (i: number) => Record<string, unknown> = () => ({ window: 'Untitled - Notepad' }),
): Promise<{ sessionId: string; dir: string }> {
  const recorder = createRecorder({ sessionsDir, stderr: () => {} });
  let next = 0;
  const wrapped = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
    content: [
      { type: 'image', data: pngs[next++]!.toString('base64'), mimeType: 'image/png' },
      { type: 'text', text: JSON.stringify({ ok: true, sessionId: null, result: { captured: true } }) },
    ],
    isError: false,
  }));
  for (let i = 0; i < pngs.length; i++) await wrapped('capture', argsOf(i));
  const sessionId = recorder.defaultSessionId;
  await recorder.close();
  const dir = path.join(sessionsDir, fs.readdirSync(sessionsDir).find((d) => d.endsWith(`-${sessionId}`))!);
  return { sessionId, dir };
}
