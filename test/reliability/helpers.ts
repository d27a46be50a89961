/**
 * Shared helpers of the reliability suites: temp roots, a listing of everything under a dir, scans of every
 * text column of a session log and every text file of a bundle for image bytes and secrets, a heap figure
 * after GC, and the built CLI.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import Database from 'better-sqlite3';
import { BUNDLE_CLI, type ChildRun, ROOT, runNode } from '../support/programs.js';
import { tempDir } from '../support/temp.js';

export { BUNDLE_CLI, ROOT } from '../support/programs.js';
export const DIST_INDEX = path.join(ROOT, 'dist', 'index.js');

/** The PNG signature as base64 starts every inline PNG; it must never appear in a log or a text file. */
export const PNG_BASE64_PREFIX = 'iVBORw0KGgo';

/** A fresh temp root (`mcec-rel-...`) with a `sessions` dir inside; everything else in it is a witness. */
export function tempRoot(): { root: string; sessionsDir: string } {
  const root = tempDir('mcec-rel-');
  const sessionsDir = path.join(root, 'sessions');
  fs.mkdirSync(sessionsDir);
  return { root, sessionsDir };
}

/** Remove a temp root. */
export function removeRoot(root: string): void {
  fs.rmSync(root, { recursive: true, force: true });
}

/** Every path under `dir` (relative, sorted), not following links; `skip` names top-level entries to leave out. */
export function listTree(dir: string, skip: string[] = []): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? path.join(rel, e.name) : e.name;
      if (!rel && skip.includes(e.name)) continue;
      out.push(e.isDirectory() ? `${r}/` : r);
      if (e.isDirectory()) walk(r);
    }
  };
  walk('');
  return out.sort();
}

export { realPng } from '../support/images.js';
export { findResult } from '../support/mcec.js';

/** A 24-character slice of a base64 string without '+' or '/', so its escaped wire form is the same text. */
export function distinctiveSlice(base64: string): string {
  for (let i = Math.floor(base64.length / 2); i + 24 <= base64.length; i++) {
    const s = base64.slice(i, i + 24);
    if (/^[A-Za-z0-9]{24}$/.test(s)) return s;
  }
  throw new Error('no plain slice in the base64');
}

export interface TextHit {
  where: string;
  needle: string;
}

/** Every text value of every table of a session log. */
export function logTexts(dbFile: string): Array<{ where: string; text: string }> {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    const out: Array<{ where: string; text: string }> = [];
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{
      name: string;
    }>;
    for (const { name } of tables) {
      for (const row of db.prepare(`SELECT * FROM "${name}"`).iterate() as Iterable<
        Record<string, unknown>
      >) {
        for (const [col, v] of Object.entries(row)) {
          if (typeof v === 'string') out.push({ where: `${name}.${col}`, text: v });
          else if (Buffer.isBuffer(v))
            out.push({ where: `${name}.${col} (blob)`, text: v.toString('latin1') });
        }
      }
    }
    return out;
  } finally {
    db.close();
  }
}

/** The needles found in any text of the session logs under `sessionsDir`. */
export function scanLogs(sessionsDir: string, needles: string[]): TextHit[] {
  const hits: TextHit[] = [];
  for (const dir of fs.readdirSync(sessionsDir)) {
    const file = path.join(sessionsDir, dir, 'session.sqlite');
    if (!fs.existsSync(file)) continue;
    for (const { where, text } of logTexts(file)) {
      for (const needle of needles)
        if (text.includes(needle)) hits.push({ where: `${dir}: ${where}`, needle });
    }
  }
  return hits;
}

/**
 * The files of a zip, extracted by unzip (name -> bytes); `unzip -Z1` lists them. One extraction into a temp
 * dir, not an `unzip -p` per entry: the hostile suite read its ten bundles' entries in 4.3 s of spawns.
 */
export function zipFiles(zipFile: string): Map<string, Buffer> {
  const names = spawnSync('unzip', ['-Z1', zipFile], { encoding: 'utf8' });
  if (names.status !== 0) throw new Error(`unzip -Z1 failed: ${names.stderr}`);
  const dir = tempDir('mcec-unzip-');
  try {
    const r = spawnSync('unzip', ['-qq', '-o', zipFile, '-d', dir], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`unzip failed: ${r.stderr}`);
    const out = new Map<string, Buffer>();
    for (const name of names.stdout.split('\n').filter((n) => n && !n.endsWith('/')))
      out.set(name, fs.readFileSync(path.join(dir, name)));
    return out;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The needles found in the text files (everything but images and the SQLite snapshot) of a bundle (its path,
 * or its files as `zipFiles` read them).
 */
export function scanBundleTexts(zip: string | Map<string, Buffer>, needles: string[]): TextHit[] {
  const hits: TextHit[] = [];
  for (const [name, data] of typeof zip === 'string' ? zipFiles(zip) : zip) {
    if (/\.(png|jpe?g|gif|bmp|webp|sqlite)$/i.test(name)) continue;
    const text = data.toString('utf8');
    for (const needle of needles) if (text.includes(needle)) hits.push({ where: name, needle });
  }
  return hits;
}

let gcFn: (() => void) | undefined;
/** Heap used after a full GC (GC exposed at run time, so no flag is needed). */
export function heapAfterGc(): number {
  if (!gcFn) {
    v8.setFlagsFromString('--expose-gc');
    gcFn = vm.runInNewContext('gc') as () => void;
  }
  gcFn();
  gcFn();
  return process.memoryUsage().heapUsed;
}

/** Run the built mcec-bundle synchronously. */
export function bundleCli(args: string[], env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BUNDLE_CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    maxBuffer: 64 << 20,
  });
}

/** Run the built mcec-bundle without blocking the event loop (so recording can go on meanwhile). */
export function bundleCliAsync(args: string[]): Promise<ChildRun> {
  return runNode([BUNDLE_CLI, ...args]);
}

/** The one session dir under `sessionsDir` whose name ends with `-<id>`. */
export function sessionDirOf(sessionsDir: string, id: string): string {
  const found = fs.readdirSync(sessionsDir).filter((d) => d.endsWith(`-${id}`));
  if (found.length !== 1)
    throw new Error(`expected one session dir for ${id}, found ${found.join(', ') || 'none'}`);
  return path.join(sessionsDir, found[0]!);
}

/** With MCEC_RELIABILITY_FIGURES=<file>, suites append the figures RELIABILITY.md quotes (one JSON per line). */
export function reportFigure(suite: string, figures: Record<string, unknown>): void {
  const file = process.env.MCEC_RELIABILITY_FIGURES;
  if (!file) return;
  fs.appendFileSync(file, `${JSON.stringify({ suite, at: new Date().toISOString(), ...figures })}\n`);
}
