// The player's model from stored call rows: frames from new images, actions on the latest image of their
// window, and a note instead of a mark wherever the mapping is unsure.
import { describe, expect, it } from 'vitest';
import type { Mark } from '../../src/report/player/marks.js';
import { MAX_STEPS, PlayerCollector, type PlayerInputs } from '../../src/report/player/model.js';
import type { ArtifactRow, CallRow } from '../../src/store/schema.js';

const notepad = { handle: 65552, title: 'Untitled - Notepad', x: 120, y: 80, width: 800, height: 600 };

function call(
  seq: number,
  tool: string,
  args: unknown,
  envelope: unknown,
  status: CallRow['status'] = 'ok',
): CallRow {
  const env = envelope as { error?: { code?: string } };
  return {
    seq,
    tool,
    args: JSON.stringify(args),
    rpc_id: null,
    transport: 'wrap',
    started_at: `2026-07-01T10:00:${String(seq).padStart(2, '0')}.000Z`,
    ended_at: null,
    duration_ms: 5,
    status,
    ok: status === 'ok' ? 1 : 0,
    error_code: env.error?.code ?? null,
    error_category: null,
    error_detail: null,
    output_kind: 'envelope',
    envelope: JSON.stringify(envelope),
    response: null,
    violations: null,
    payload_dropped: 0,
  };
}

function artifact(seq: number, path: string, width: number, height: number): ArtifactRow {
  return {
    id: seq,
    call_seq: seq,
    role: 'result',
    json_path: '/result/base64',
    path,
    sha256: null,
    bytes: 100,
    width,
    height,
    format: 'png',
    blank_check: null,
    error: null,
    created_at: '2026-07-01T10:00:00.000Z',
  };
}

function collect(
  rows: CallRow[],
  artifacts: ArtifactRow[],
  serverVersion: string | null,
  failingSeq: number | null = null,
) {
  const inputs: PlayerInputs = {
    artifactsBySeq: new Map(artifacts.map((a) => [a.call_seq!, [a]])),
    firstSeqOfImage: new Map(artifacts.map((a) => [a.path!, a.call_seq!])),
    keyOf: (a) => a.path,
    serverVersion,
    failingSeq,
  };
  const c = new PlayerCollector(inputs);
  for (const r of rows) c.add(r);
  return c.finish();
}

const capture = (seq: number) =>
  call(
    seq,
    'capture',
    { window: 'Notepad' },
    { ok: true, result: { kind: 'capture-summary', window: notepad, width: 400, height: 300 } },
  );
const captions = (marks: Mark[]) => marks.flatMap((m) => (m.kind === 'caption' ? [m.text] : []));

describe('PlayerCollector', () => {
  it("draws a successful click from its result's screen point on a downscaled capture", () => {
    const model = collect(
      [
        capture(1),
        call(
          2,
          'click',
          { window: 'Notepad', at: { x: 400, y: 300 } },
          { ok: true, result: { clicked: true, at: [520, 380], button: 'left', count: 2 } },
        ),
      ],
      [artifact(1, 'artifacts/a.png', 400, 300)],
      null,
    );
    expect(model.frames).toHaveLength(1);
    expect(model.steps.map((s) => s.seq)).toEqual([1, 2]);
    expect(model.steps[1]!.marks).toEqual([
      { kind: 'point', x: 200, y: 150, label: 'left double-click at 520,380', failed: false },
    ]);
  });

  it("says why a failed click's window-relative pixels are not drawn when the server's version is unknown", () => {
    const failed = call(
      2,
      'click',
      { window: 'Notepad', at: { x: 10, y: 20 } },
      { ok: false, error: { code: 'focus-not-set' } },
      'failed',
    );
    const unknown = collect([capture(1), failed], [artifact(1, 'artifacts/a.png', 400, 300)], null);
    expect(captions(unknown.steps[1]!.marks)[0]).toMatch(/not drawn: .*window-relative since MCEC 3\.0\.28/);
    const known = collect([capture(1), failed], [artifact(1, 'artifacts/a.png', 400, 300)], '3.0.29');
    expect(known.steps[1]!.marks[0]).toMatchObject({ kind: 'point', x: 5, y: 10, failed: true });
  });

  it('does not draw on an image whose window has moved since', () => {
    const moved = { ...notepad, x: 300 };
    const model = collect(
      [
        capture(1),
        call(
          2,
          'query',
          { window: 'Notepad' },
          { ok: true, result: { window: moved, nodeCount: 1, truncated: false, tree: {} } },
        ),
        call(
          3,
          'click',
          { at: { x: 600, y: 300 } },
          { ok: true, result: { clicked: true, at: [600, 300], button: 'left', count: 1 } },
        ),
      ],
      [artifact(1, 'artifacts/a.png', 400, 300)],
      '3.0.29',
    );
    const click = model.steps.find((s) => s.seq === 3)!;
    expect(click.marks.filter((m) => m.kind === 'point')).toEqual([]);
    expect(captions(click.marks)[0]).toMatch(/the window moved since this image/);
  });

  it("boxes an ambiguous selector's candidates from the window's last query, and an invoke from its find", () => {
    const tree = {
      x: 120,
      y: 80,
      width: 800,
      height: 600,
      name: 'Untitled - Notepad',
      children: [
        { x: 140, y: 100, width: 40, height: 20, name: 'Save', automationId: 'a', children: [] },
        { x: 200, y: 100, width: 40, height: 20, name: 'Save', automationId: 'b', children: [] },
      ],
    };
    const model = collect(
      [
        capture(1),
        call(
          2,
          'query',
          { window: 'Notepad' },
          { ok: true, result: { window: notepad, nodeCount: 3, truncated: false, tree } },
        ),
        call(
          3,
          'find',
          { window: 'Notepad', value: 'Save' },
          { ok: false, error: { code: 'selector-matched-2' } },
          'failed',
        ),
        call(
          4,
          'find',
          { window: 'Notepad', by: 'automationid', value: 'b' },
          { ok: true, result: { found: true, element: tree.children[1], window: notepad } },
        ),
        call(
          5,
          'invoke',
          { window: 'Notepad', by: 'automationid', value: 'b' },
          { ok: true, result: { invoked: true } },
        ),
        call(
          6,
          'send_command',
          { command: 'chars:[typed text: 8 chars]' },
          { ok: true, result: { output: '' } },
        ),
      ],
      [artifact(1, 'artifacts/a.png', 400, 300)],
      '3.0.29',
      3,
    );
    const bySeq = new Map(model.steps.map((s) => [s.seq, s]));
    const boxes = bySeq.get(3)!.marks.filter((m) => m.kind === 'box');
    expect(boxes).toMatchObject([
      {
        x: 10,
        y: 10,
        width: 20,
        height: 10,
        tone: 'ambiguous',
        label: 'name="Save" · ambiguous: candidate 1 of 2',
      },
      { x: 40, y: 10, tone: 'ambiguous' },
    ]);
    expect(bySeq.get(3)!.failing).toBe(true);
    expect(bySeq.get(5)!.marks[0]).toMatchObject({
      kind: 'box',
      x: 40,
      y: 10,
      tone: 'found',
      label: 'invoke automationid="b" · invoked',
    });
    expect(captions(bySeq.get(6)!.marks)).toEqual(['typed: [typed text: 8 chars]']);
  });

  it('keeps MAX_STEPS steps around the failing call of a long run, whichever step fails', () => {
    // One frame, then finds: a step each. The collector lets go of steps while collecting (at 800 held),
    // so the runs end just after one of those points, and far from one.
    const found = {
      found: true,
      element: { name: 'Save', x: 200, y: 100, width: 50, height: 20 },
      window: notepad,
    };
    const images = [artifact(1, 'artifacts/a.png', 400, 300)];
    for (const calls of [1251, 2601, 3000]) {
      const rows = [capture(1)];
      for (let seq = 2; seq <= calls; seq++) {
        rows.push(call(seq, 'find', { window: 'Notepad', value: 'Save' }, { ok: true, result: found }));
      }
      const half = Math.floor(calls / 2);
      for (const failingSeq of [null, 1, 301, 302, half, calls - 350, calls - 1, calls, calls + 1]) {
        const model = collect(rows, images, null, failingSeq);
        // The window as the whole list gives it: 300 steps before the failing one, else the last 400.
        const failing = failingSeq !== null && failingSeq <= calls ? failingSeq - 1 : calls - 1;
        const from = Math.max(0, Math.min(failing - 300, calls - MAX_STEPS));
        const what = `${calls} calls, failing #${failingSeq}`;
        expect(model.stepsOmitted, what).toBe(calls - MAX_STEPS);
        expect(model.steps[0]!.seq, what).toBe(from + 1);
        expect(model.steps.map((s) => s.seq)).toEqual(
          Array.from({ length: MAX_STEPS }, (_, i) => from + i + 1),
        );
        const last = model.steps.at(-1)!;
        expect(last.title).toBe(`#${last.seq} find name="Save"`);
        expect(last.marks).toEqual([expect.objectContaining({ kind: 'box', label: 'name="Save" · found' })]);
      }
    }
  });
});
