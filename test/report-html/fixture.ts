/** A small session-log writer for the report.html tests: real SQLite, real PNG files made by sharp. */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sessionDirName, utcStampMillis } from '../../src/store/layout.js';
import { openSessionDb, type SessionDb } from '../../src/store/open.js';

type Json = Record<string, unknown>;

export interface FixtureCall {
  tool: string;
  args?: Json;
  /** ok (default), failed, fault or pending. */
  status?: 'ok' | 'failed' | 'fault' | 'pending';
  result?: Json;
  error?: { code: string; category: string; detail: string; lastObservation?: Json };
  warnings?: Array<{ code: string; detail: string }>;
  /** PNG bytes taken out of the envelope: stored as a file and replaced by a capture-summary. */
  image?: { png: Buffer; role?: 'result' | 'partialResult' };
  durationMs?: number;
  violations?: Array<{ path: string; message: string }>;
}

/** A session being written by the fixture. */
export class FixtureSession {
  readonly dir: string;
  readonly sessionId: string;
  private readonly db: SessionDb;
  private readonly start: Date;
  private seq = 0;
  private images = 0;
  private clock: number;

  private constructor(root: string, sessionId: string, start: Date, scenario: string | null) {
    this.sessionId = sessionId;
    this.start = start;
    this.clock = start.getTime();
    this.dir = path.join(root, sessionDirName(start, sessionId));
    fs.mkdirSync(path.join(this.dir, 'artifacts'), { recursive: true });
    this.db = openSessionDb(path.join(this.dir, 'session.sqlite'));
    this.db
      .prepare(
        `INSERT INTO session (id, session_id, scenario, started_at, status, recorder_version, writer_pid, environment)
         VALUES (1, ?, ?, ?, 'open', '0.1.0', ?, ?)`,
      )
      .run(
        sessionId,
        scenario,
        start.toISOString(),
        process.pid,
        JSON.stringify({
          os: 'Windows 11 (sim)',
          node: process.version,
          recorder: '0.1.0',
          server: { name: 'MCEC', version: '3.0.0-sim', protocolVersion: '2025-06-18' },
        }),
      );
  }

  /** Create a session dir under `root`. */
  static create(
    root: string,
    options: { sessionId?: string; scenario?: string | null; start?: Date } = {},
  ): FixtureSession {
    return new FixtureSession(
      root,
      options.sessionId ?? '5f19c9c01a3f',
      options.start ?? new Date(Date.UTC(2026, 11, 2, 10, 15, 2, 123)),
      options.scenario === undefined ? 'Save a Notepad document' : options.scenario,
    );
  }

  /** Record one call; returns its seq. */
  call(c: FixtureCall): number {
    const seq = ++this.seq;
    const status = c.status ?? (c.error ? 'failed' : 'ok');
    const started = new Date(this.clock);
    const duration = c.durationMs ?? 20 + ((seq * 37) % 400);
    this.clock += duration + 15;
    const ended = new Date(started.getTime() + duration);
    let summary: Json | null = null;
    if (c.image) {
      this.images += 1;
      const name = `capture-${utcStampMillis(started)}-${this.images}.png`;
      fs.writeFileSync(path.join(this.dir, 'artifacts', name), c.image.png);
      const meta = pngSize(c.image.png);
      const sha = createHash('sha256').update(c.image.png).digest('hex');
      summary = {
        kind: 'capture-summary',
        width: meta.width,
        height: meta.height,
        encoding: 'png',
        bytes: c.image.png.length,
        artifact: `artifacts/${name}`,
        sha256: sha,
      };
      this.db
        .prepare(
          `INSERT INTO artifacts (call_seq, role, json_path, path, sha256, bytes, width, height, format, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'png', ?)`,
        )
        .run(
          seq,
          c.image.role ?? 'result',
          c.image.role === 'partialResult' ? '/error/partialResult/base64' : '/result/base64',
          `artifacts/${name}`,
          sha,
          c.image.png.length,
          meta.width,
          meta.height,
          started.toISOString(),
        );
    }
    let envelope: Json | null = null;
    if (status === 'ok') {
      envelope = {
        sessionId: this.sessionId,
        ok: true,
        result: summary && c.image?.role !== 'partialResult' ? { ...c.result, ...summary } : (c.result ?? {}),
      };
    } else if (status === 'failed' && c.error) {
      const error: Json = { ...c.error };
      if (summary && c.image?.role === 'partialResult') error.partialResult = summary;
      envelope = { sessionId: this.sessionId, ok: false, error };
    }
    if (envelope && c.warnings?.length) envelope.warnings = c.warnings;
    this.db
      .prepare(
        `INSERT INTO calls (seq, tool, args, rpc_id, transport, started_at, ended_at, duration_ms, status, ok,
          error_code, error_category, error_detail, output_kind, envelope, response, violations, payload_dropped)
         VALUES (?, ?, ?, ?, 'wrap', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, 0)`,
      )
      .run(
        seq,
        c.tool,
        JSON.stringify(c.args ?? {}),
        String(seq),
        started.toISOString(),
        status === 'pending' ? null : ended.toISOString(),
        status === 'pending' ? null : duration,
        status,
        status === 'pending' ? null : status === 'ok' ? 1 : 0,
        c.error?.code ?? null,
        c.error?.category ?? null,
        c.error?.detail ?? null,
        status === 'pending' ? null : 'envelope',
        envelope ? JSON.stringify(envelope) : null,
        c.violations ? JSON.stringify(c.violations) : null,
      );
    for (const w of c.warnings ?? []) {
      this.db
        .prepare('INSERT INTO warnings (call_seq, code, detail) VALUES (?, ?, ?)')
        .run(seq, w.code, w.detail);
    }
    if (status === 'ok' && ['query', 'capture', 'get-text', 'find', 'wait-for'].includes(c.tool)) {
      this.db
        .prepare('UPDATE session SET last_observation = ? WHERE id = 1')
        .run(JSON.stringify(summary ?? { tool: c.tool, seq }));
    }
    return seq;
  }

  /** Record a runner step. */
  step(name: string, status: string, detail?: string): void {
    this.db
      .prepare(`INSERT INTO events (at, kind, detail) VALUES (?, 'step', ?)`)
      .run(new Date(this.clock).toISOString(), JSON.stringify({ name, status, detail }));
  }

  /** End the session (optionally with a verdict) and close the log. */
  end(verdict?: { passed: boolean; reason?: string }): string {
    this.db
      .prepare(`UPDATE session SET status = 'ended', ended_at = ?, passed = ?, end_reason = ? WHERE id = 1`)
      .run(
        new Date(this.clock).toISOString(),
        verdict ? (verdict.passed ? 1 : 0) : null,
        verdict?.reason ?? null,
      );
    this.db.close();
    return this.dir;
  }

  /** The session start (for tests that check times). */
  get startedAt(): Date {
    return this.start;
  }
}

/** Width and height from a PNG's IHDR chunk. */
export function pngSize(png: Buffer): { width: number; height: number } {
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

type Sharp = typeof import('sharp')['default'];

async function sharpModule(): Promise<Sharp> {
  return (await import('sharp')).default;
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** A PNG that looks like a desktop window (title bar, text lines, a button), drawn from SVG by sharp. */
export async function windowPng(
  title: string,
  options: { width?: number; height?: number; accent?: string; lines?: string[]; dialog?: string } = {},
): Promise<Buffer> {
  const width = options.width ?? 800;
  const height = options.height ?? 500;
  const accent = options.accent ?? '#2b579a';
  const lines = (options.lines ?? ['Hello + <world> & friends', 'Second line of the document'])
    .map(
      (l, i) =>
        `<text x="24" y="${96 + i * 26}" font-family="sans-serif" font-size="18" fill="#222">${escapeXml(l)}</text>`,
    )
    .join('');
  const dialog = options.dialog
    ? `<rect x="${width / 2 - 170}" y="${height / 2 - 80}" width="340" height="160" fill="#fff" stroke="#888"/>
       <rect x="${width / 2 - 170}" y="${height / 2 - 80}" width="340" height="30" fill="${accent}"/>
       <text x="${width / 2 - 158}" y="${height / 2 - 59}" font-family="sans-serif" font-size="15" fill="#fff">${escapeXml(options.dialog)}</text>
       <rect x="${width / 2 + 40}" y="${height / 2 + 36}" width="110" height="30" rx="3" fill="#e5e5e5" stroke="#777"/>
       <text x="${width / 2 + 75}" y="${height / 2 + 57}" font-family="sans-serif" font-size="15" fill="#222">Save</text>`
    : '';
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect width="100%" height="100%" fill="#f3f3f3"/>
    <rect width="100%" height="40" fill="${accent}"/>
    <text x="16" y="27" font-family="sans-serif" font-size="18" fill="#fff">${escapeXml(title)}</text>
    <rect x="0" y="40" width="100%" height="26" fill="#e8e8e8"/>
    <text x="16" y="58" font-family="sans-serif" font-size="14" fill="#333">File   Edit   Format   View   Help</text>
    ${lines}${dialog}
  </svg>`;
  const sharp = await sharpModule();
  return sharp(Buffer.from(svg)).png().toBuffer();
}

/** An all-black PNG (a blank capture). */
export async function blankPng(width = 800, height = 500): Promise<Buffer> {
  const sharp = await sharpModule();
  return sharp({ create: { width, height, channels: 3, background: { r: 0, g: 0, b: 0 } } })
    .png()
    .toBuffer();
}

/** A PNG of seeded noise (thumbnails of it do not compress to nothing). */
export async function noisePng(width: number, height: number, seed: number): Promise<Buffer> {
  let s = seed >>> 0 || 1;
  const data = Buffer.alloc(width * height * 3);
  for (let i = 0; i < data.length; i++) {
    // xorshift32: fast, seeded, good enough for noise.
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    data[i] = s & 0xff;
  }
  const sharp = await sharpModule();
  return sharp(data, { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}
