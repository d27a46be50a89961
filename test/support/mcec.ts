/**
 * MCEC material shared by the suites: the windows MCEC describes (one Notepad, one Save As dialog) and the
 * CallToolResult shapes it answers with.
 */
import type { Envelope, WindowInfo } from '../../src/contract/types.js';

/** A Notepad window as MCEC describes it. */
export const NOTEPAD: WindowInfo = {
  handle: 131234,
  title: 'Untitled - Notepad',
  className: 'Notepad',
  processName: 'notepad',
  processId: 4242,
  x: 100,
  y: 100,
  width: 800,
  height: 600,
};

/** Notepad's Save As dialog. */
export const SAVE_AS: WindowInfo = {
  handle: 131300,
  title: 'Save As',
  className: '#32770',
  processName: 'notepad',
  processId: 4242,
  x: 200,
  y: 150,
  width: 640,
  height: 480,
};

/** A window capture's result fields in the order MCEC writes them: inline (with `base64`). */
export const INLINE_CAPTURE_KEYS = [
  'handle',
  'width',
  'height',
  'encoding',
  'bytes',
  'base64',
  'window',
  'blankCheck',
];

/** A window capture's result fields in MCEC's order with `pathOnly`: no `base64`, the file's `artifact` path last. */
export const PATH_ONLY_CAPTURE_KEYS = [
  'handle',
  'width',
  'height',
  'encoding',
  'bytes',
  'window',
  'blankCheck',
  'artifact',
];

/** An MCEC CallToolResult: the image block first (successful inline capture), the envelope text block last. */
export function callToolResult(
  envelope: Envelope | Record<string, unknown>,
  image?: Buffer,
): Record<string, unknown> {
  const content: Record<string, unknown>[] = [];
  if (image) content.push({ type: 'image', data: image.toString('base64'), mimeType: 'image/png' });
  content.push({ type: 'text', text: JSON.stringify(envelope) });
  return { content, isError: !(envelope as { ok?: boolean }).ok };
}

/** A successful find of the button named `value` in Notepad, as MCEC sends it (no MCEC session id). */
export function findResult(value = 'Save'): {
  content: Array<{ type: 'text'; text: string }>;
  isError: boolean;
} {
  const envelope = {
    ok: true,
    sessionId: null,
    result: {
      found: true,
      element: {
        controlType: 'Button',
        x: 10,
        y: 10,
        width: 80,
        height: 24,
        isEnabled: true,
        name: value,
        children: [],
      },
      window: NOTEPAD,
    },
  };
  return { content: [{ type: 'text', text: JSON.stringify(envelope) }], isError: false };
}
