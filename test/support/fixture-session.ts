/**
 * Writes realistic session logs straight into SQLite (openSessionDb + inserts), without the recorder, so
 * suites can build edge cases: pending calls, crashed sessions with a dead writer pid, 10,000 calls,
 * captures backed by real PNG files made by sharp.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { CaptureSummary, Violation, Warning, WindowInfo } from '../../src/contract/types.js';
import { ARTIFACTS_DIR, artifactFileName, LOG_FILE, sessionDirName } from '../../src/paths/naming.js';
import { buildSummary } from '../../src/report/summary.js';
import type { SessionSummary, SummaryOptions } from '../../src/report/types.js';
import { openSessionDb, type SessionDb } from '../../src/store/open.js';
import { SessionReader } from '../../src/store/session-reader.js';

import { NOTEPAD, SAVE_AS } from './mcec.js';

export { removeDir, tempDir as makeSessionsDir } from '../support/temp.js';
export { NOTEPAD, SAVE_AS };

/** The summary of the session in `dir`, as the reports build it (its reader closed again). */
export async function summaryOfSession(dir: string, options?: SummaryOptions): Promise<SessionSummary> {
  const reader = SessionReader.open(dir);
  try {
    return await buildSummary(reader, options);
  } finally {
    reader.close();
  }
}

/** The pid of a process that has already exited (a crashed writer). */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  if (child.pid === undefined) throw new Error('could not spawn a child to get a dead pid');
  return child.pid;
}

export interface FixtureOptions {
  sessionId?: string;
  originalId?: string | null;
  scenario?: string | null;
  startedAt?: Date;
  status?: 'open' | 'ended' | 'aborted';
  /** Default: this process (alive). Use deadPid() for a crashed writer. */
  writerPid?: number | null;
  environment?: Record<string, unknown>;
  recorderVersion?: string;
}

export interface FixtureError {
  code: string;
  category: string;
  detail: string;
  lastObservation?: Record<string, unknown> | null;
  partialResult?: Record<string, unknown> | null;
}

export interface FixtureCall {
  tool: string;
  args?: Record<string, unknown> | null;
  status?: 'ok' | 'failed' | 'fault' | 'pending';
  result?: Record<string, unknown> | null;
  error?: FixtureError;
  warnings?: Warning[];
  durationMs?: number;
  /** Idle time after the call (default 50 ms). */
  gapMs?: number;
  violations?: Violation[];
  payloadDropped?: boolean;
  transport?: 'wrap' | 'http' | 'stdio';
  outputKind?: string;
}

export interface FixtureImage {
  /** Relative to the session dir. */
  artifact: string;
  sha256: string;
  bytes: number;
  width: number;
  height: number;
}

const DEFAULT_START = new Date('2026-12-02T10:15:00.000Z');

/** A session log under construction. */
export class FixtureSession {
  readonly dir: string;
  readonly dirName: string;
  readonly sessionId: string;
  readonly db: SessionDb;
  /** The fixture's clock (ms since epoch): calls and events are stamped with it, then it advances. */
  clock: number;
  private seq = 0;
  private imageCounter = 0;

  private constructor(dir: string, dirName: string, sessionId: string, db: SessionDb, clock: number) {
    this.dir = dir;
    this.dirName = dirName;
    this.sessionId = sessionId;
    this.db = db;
    this.clock = clock;
  }

  /** Create the session dir, the log and its session row (status 'open' unless told otherwise). */
  static create(sessionsDir: string, options: FixtureOptions = {}): FixtureSession {
    const sessionId =
      options.sessionId ?? createHash('sha256').update(String(Math.random())).digest('hex').slice(0, 12);
    const startedAt = options.startedAt ?? DEFAULT_START;
    const dirName = sessionDirName(startedAt, sessionId);
    const dir = path.join(sessionsDir, dirName);
    fs.mkdirSync(path.join(dir, ARTIFACTS_DIR), { recursive: true });
    const db = openSessionDb(path.join(dir, LOG_FILE));
    const environment = options.environment ?? {
      os: 'Windows 11 Pro 10.0.26100 (x64)',
      node: 'v20.20.0',
      recorder: '0.1.0',
      server: { name: 'MCEC', version: '3.0.4', protocolVersion: '2025-06-18' },
    };
    db.prepare(
      `INSERT INTO session (id, session_id, original_id, scenario, started_at, status, recorder_version, writer_pid,
        environment) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      sessionId,
      options.originalId ?? null,
      options.scenario === undefined ? 'save a file in Notepad' : options.scenario,
      startedAt.toISOString(),
      options.status ?? 'open',
      options.recorderVersion ?? '0.1.0',
      options.writerPid === undefined ? process.pid : options.writerPid,
      JSON.stringify(environment),
    );
    const session = new FixtureSession(dir, dirName, sessionId, db, startedAt.getTime() + 10);
    session.event('session-start', { sessionId, via: 'session-start' });
    return session;
  }

  private now(): string {
    return new Date(this.clock).toISOString();
  }

  /** Insert one call (and its warnings); returns its seq. */
  call(input: FixtureCall): number {
    const seq = ++this.seq;
    const status = input.status ?? (input.error ? 'failed' : 'ok');
    const durationMs = input.durationMs ?? 100;
    const startedAt = this.now();
    let endedAt: string | null = null;
    if (status !== 'pending') {
      this.clock += durationMs;
      endedAt = this.now();
    }
    this.clock += input.gapMs ?? 50;
    let envelope: string | null = null;
    if (status === 'ok') {
      envelope = JSON.stringify({
        sessionId: this.sessionId,
        ok: true,
        result: input.result ?? {},
        ...(input.warnings?.length ? { warnings: input.warnings } : {}),
      });
    } else if (status === 'failed' || status === 'fault') {
      envelope = JSON.stringify({
        sessionId: this.sessionId,
        ok: false,
        result: null,
        error: input.error ?? { code: 'unhandled', category: 'internal', detail: 'fault' },
        ...(input.warnings?.length ? { warnings: input.warnings } : {}),
      });
    }
    if (input.payloadDropped) envelope = null;
    this.db
      .prepare(
        `INSERT INTO calls (seq, tool, args, rpc_id, transport, started_at, ended_at, duration_ms, status, ok,
          error_code, error_category, error_detail, output_kind, envelope, response, violations, payload_dropped)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)`,
      )
      .run(
        seq,
        input.tool,
        input.payloadDropped
          ? null
          : JSON.stringify({ ...(input.args ?? {}), sessionId: input.args?.sessionId ?? this.sessionId }),
        String(seq),
        input.transport ?? 'wrap',
        startedAt,
        endedAt,
        status === 'pending' ? null : durationMs,
        status,
        status === 'pending' ? null : status === 'ok' ? 1 : 0,
        input.error?.code ?? null,
        input.error?.category ?? null,
        input.error?.detail ?? null,
        status === 'pending' ? null : (input.outputKind ?? 'envelope'),
        envelope,
        input.violations?.length ? JSON.stringify(input.violations) : null,
        input.payloadDropped ? 1 : 0,
      );
    for (const w of input.warnings ?? []) {
      this.db
        .prepare('INSERT INTO warnings (call_seq, code, detail) VALUES (?, ?, ?)')
        .run(seq, w.code, w.detail);
    }
    return seq;
  }

  /** Many calls in one transaction (fast enough for 10,000). */
  manyCalls(count: number, make: (index: number) => FixtureCall): void {
    this.db.transaction(() => {
      for (let i = 0; i < count; i++) this.call(make(i));
    })();
  }

  /** Write a real PNG made by sharp into artifacts/ and return where it went. */
  async writePng(
    width: number,
    height: number,
    color: { r: number; g: number; b: number } = { r: 240, g: 240, b: 240 },
  ): Promise<FixtureImage> {
    const sharp = (await import('sharp')).default;
    // A solid background plus a darker band, so the image is not blank unless asked to be.
    const base = sharp({ create: { width, height, channels: 3, background: color } });
    const band = await sharp({
      create: {
        width: Math.max(1, Math.floor(width / 2)),
        height: Math.max(1, Math.floor(height / 4)),
        channels: 3,
        background: { r: 20, g: 60, b: 160 },
      },
    })
      .png()
      .toBuffer();
    const png = await (color.r + color.g + color.b === 0
      ? base
      : base.composite([{ input: band, top: 0, left: 0 }])
    )
      .png()
      .toBuffer();
    return this.storePng(png);
  }

  /** Write `png` into artifacts/ as the recorder would (a UTC-stamped name) and describe it (size from its IHDR). */
  storePng(png: Buffer): FixtureImage {
    const name = artifactFileName('capture', new Date(this.clock), ++this.imageCounter, 'png');
    const artifact = `${ARTIFACTS_DIR}/${name}`;
    fs.writeFileSync(path.join(this.dir, artifact), png);
    return {
      artifact,
      sha256: createHash('sha256').update(png).digest('hex'),
      bytes: png.length,
      width: png.readUInt32BE(16),
      height: png.readUInt32BE(20),
    };
  }

  /** The capture summary the recorder stores in place of a capture's bytes. */
  summaryOf(image: FixtureImage, window: WindowInfo | null = NOTEPAD, blank = false): CaptureSummary {
    return {
      kind: 'capture-summary',
      ...(window ? { window, handle: window.handle } : {}),
      width: image.width,
      height: image.height,
      encoding: 'png',
      bytes: image.bytes,
      blankCheck: { blank, dominantFraction: blank ? 1 : 0.6, dominantIsDark: blank },
      artifact: image.artifact,
      sha256: image.sha256,
    };
  }

  /** Insert an artifacts row for an image found in call `seq`. */
  artifactRow(seq: number, role: string, image: FixtureImage, jsonPath = '/result/base64'): void {
    this.db
      .prepare(
        `INSERT INTO artifacts (call_seq, role, json_path, path, sha256, bytes, width, height, format, blank_check,
          error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'png', NULL, NULL, ?)`,
      )
      .run(
        seq,
        role,
        jsonPath,
        image.artifact,
        image.sha256,
        image.bytes,
        image.width,
        image.height,
        this.now(),
      );
  }

  /** A successful window capture with a real PNG; returns its seq and image. */
  async capture(
    options: {
      window?: WindowInfo | null;
      width?: number;
      height?: number;
      color?: { r: number; g: number; b: number };
    } = {},
  ): Promise<{ seq: number; image: FixtureImage; summary: CaptureSummary }> {
    const image = await this.writePng(options.width ?? 800, options.height ?? 600, options.color);
    const window = options.window === undefined ? NOTEPAD : options.window;
    const summary = this.summaryOf(image, window);
    const seq = this.call({
      tool: 'capture',
      args: window ? { title: window.title } : { region: { x: 0, y: 0, width: 800, height: 600 } },
      result: summary as unknown as Record<string, unknown>,
    });
    this.artifactRow(seq, 'result', image);
    return { seq, image, summary };
  }

  /** A capture that failed capture-blank, keeping the suspect (black) PNG as partialResult. */
  async blankCapture(
    lastObservation: Record<string, unknown> | null = null,
  ): Promise<{ seq: number; image: FixtureImage }> {
    const image = await this.writePng(800, 600, { r: 0, g: 0, b: 0 });
    const seq = this.call({
      tool: 'capture',
      args: { title: NOTEPAD.title },
      error: {
        code: 'frame-all-black',
        category: 'capture-blank',
        detail:
          'The captured frame is all black (dominant colour 100%); the window may be minimized or occluded.',
        lastObservation,
        partialResult: this.summaryOf(image, NOTEPAD, true) as unknown as Record<string, unknown>,
      },
    });
    this.artifactRow(seq, 'partialResult', image, '/error/partialResult/base64');
    return { seq, image };
  }

  /** Complete a pending call. */
  complete(seq: number, outcome: { result?: Record<string, unknown>; error?: FixtureError }): void {
    const ok = !outcome.error;
    this.db
      .prepare(
        `UPDATE calls SET status = ?, ok = ?, ended_at = ?, duration_ms = 100, error_code = ?, error_category = ?,
          error_detail = ?, envelope = ?, output_kind = 'envelope' WHERE seq = ?`,
      )
      .run(
        ok ? 'ok' : 'failed',
        ok ? 1 : 0,
        this.now(),
        outcome.error?.code ?? null,
        outcome.error?.category ?? null,
        outcome.error?.detail ?? null,
        JSON.stringify(ok ? { ok: true, result: outcome.result ?? {} } : { ok: false, error: outcome.error }),
        seq,
      );
  }

  /** Insert an event. */
  event(kind: string, detail: Record<string, unknown>, callSeq: number | null = null): void {
    this.db
      .prepare('INSERT INTO events (at, kind, call_seq, detail) VALUES (?, ?, ?, ?)')
      .run(this.now(), kind, callSeq, JSON.stringify(detail));
  }

  /** A runner step. */
  step(name: string, status: string, detail?: string): void {
    this.event('step', { name, status, ...(detail === undefined ? {} : { detail }) });
    this.clock += 5;
  }

  /** End the session, with an explicit verdict when given. */
  end(verdict: { passed?: boolean; reason?: string } = {}): void {
    this.clock += 20;
    this.db
      .prepare('UPDATE session SET status = ?, ended_at = ?, passed = ?, end_reason = ? WHERE id = 1')
      .run(
        'ended',
        this.now(),
        verdict.passed === undefined ? null : verdict.passed ? 1 : 0,
        verdict.reason ?? null,
      );
    this.event('session-end', { via: 'end', ...verdict });
  }

  /** Close the writer connection (the session row stays as it is). */
  close(): void {
    if (this.db.open) this.db.close();
  }
}

/** Arguments and results of common MCEC calls, for building scenarios quickly. */
export const calls = {
  findSave: (found = true): FixtureCall => ({
    tool: 'find',
    args: { name: 'Save', controlType: 'Button' },
    result: {
      found,
      element: found
        ? {
            controlType: 'Button',
            name: 'Save',
            automationId: '1',
            x: 500,
            y: 560,
            width: 80,
            height: 24,
            isEnabled: true,
            isOffscreen: false,
            children: [],
          }
        : null,
      window: SAVE_AS,
    },
  }),
  query: (nodeCount = 14, truncated = false): FixtureCall => ({
    tool: 'query',
    args: { title: 'Save As' },
    result: {
      window: SAVE_AS,
      nodeCount,
      truncated,
      tree: [
        {
          controlType: 'Pane',
          name: 'root',
          children: [{ controlType: 'Button', name: 'Save', children: [] }],
        },
      ],
    },
    ...(truncated
      ? { warnings: [{ code: 'tree-truncated', detail: `UIA tree clipped at ${nodeCount} nodes` }] }
      : {}),
  }),
  invokeSave: (): FixtureCall => ({
    tool: 'invoke',
    args: { name: 'Save', action: 'invoke' },
    result: { invoked: true, action: 'invoke', by: 'InvokePattern', value: null },
  }),
  displays: (): FixtureCall => ({
    tool: 'displays',
    args: {},
    result: {
      count: 2,
      virtualBounds: { x: 0, y: 0, width: 4480, height: 1440 },
      displays: [
        {
          index: 0,
          primary: false,
          deviceName: '\\\\.\\DISPLAY2',
          bounds: { x: 1920, y: 0, width: 2560, height: 1440 },
          workingArea: {},
          dpi: 96,
          scale: 1,
        },
        {
          index: 1,
          primary: true,
          deviceName: '\\\\.\\DISPLAY1',
          bounds: { x: 0, y: 0, width: 1920, height: 1080 },
          workingArea: {},
          dpi: 144,
          scale: 1.5,
        },
      ],
    },
  }),
  waitForTimeout: (): FixtureCall => ({
    tool: 'wait-for',
    args: { name: 'Saved', controlType: 'Text', timeoutMs: 5000 },
    durationMs: 5004,
    error: {
      code: 'wait-condition-timeout',
      category: 'timeout',
      detail: "No element matching name='Saved' appeared within 5000 ms.",
    },
  }),
  ambiguousFind: (): FixtureCall => ({
    tool: 'find',
    args: { name: 'Save' },
    error: {
      code: 'selector-matched-3',
      category: 'ambiguous-selector',
      detail: "Selector name='Save' matched 3 elements; refine with automationId or controlType.",
    },
  }),
};
