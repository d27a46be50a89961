/**
 * The rooms' import direction: every relative import in src/ must follow docs/architecture-imports.json (the
 * table docs/architecture.md shows, and each room's README.md its own row of), no two rooms may reach each
 * other through any chain of imports, and no room reaches through a chain what its row and file edges do not
 * let it (record never reaches fleet), each file edge held on its own. Reads the source text only (a regex over
 * import/export specifiers, side-effect imports and `new URL('./x.js', import.meta.url)`), so it runs in well
 * under a second.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = path.join(ROOT, 'src');

interface ImportRules {
  /** Room (a folder under src/, or `(root)` for src/*.ts) -> the rooms it may import. */
  rooms: Record<string, string[]>;
  /** Edges allowed only between these files (paths under src/), beyond what `rooms` allows. */
  fileEdges: Array<{ from: string; to: string[]; why: string; reaches?: string[] }>;
}

const rules = JSON.parse(
  fs.readFileSync(path.join(ROOT, 'docs', 'architecture-imports.json'), 'utf8'),
) as ImportRules;

/**
 * Relative paths in static imports, re-exports, `import type`, side-effect imports (`import './x.js'`),
 * dynamic `import('...')`, and `new URL('./x.js', import.meta.url)` (how a worker's entry or a module loaded
 * later by URL is named; only `.js` targets, so package.json, schemas and templates stay out).
 */
const SPECIFIER = new RegExp(
  [
    /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*'(\.{1,2}\/[^']+)'/.source,
    /(?:^|[\s;])import\s*'(\.{1,2}\/[^']+)'/.source,
    /import\(\s*'(\.{1,2}\/[^']+)'\s*\)/.source,
    /new URL\(\s*'(\.{1,2}\/[^']+\.js)'\s*,\s*import\.meta\.url\s*,?\s*\)/.source,
  ].join('|'),
  'g',
);

interface Edge {
  from: string;
  to: string;
}

function roomOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 1 ? parts[0]! : '(root)';
}

/** The relative paths a source text refers to, in any of SPECIFIER's forms. */
function specifiersIn(text: string): string[] {
  return [...text.matchAll(SPECIFIER)].map((m) => (m[1] ?? m[2] ?? m[3] ?? m[4])!);
}

function sourceEdges(): Edge[] {
  const edges: Edge[] = [];
  const files = (fs.readdirSync(SRC, { recursive: true }) as string[])
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => f.endsWith('.ts'));
  for (const file of files) {
    const text = fs.readFileSync(path.join(SRC, file), 'utf8');
    for (const spec of specifiersIn(text)) {
      const target = path.posix
        .normalize(path.posix.join(path.posix.dirname(file), spec))
        .replace(/\.js$/, '.ts');
      edges.push({ from: file, to: target });
    }
  }
  return edges;
}

/** An edge the JSON's `fileEdges` allow, beyond the rooms' rows. */
function byFileEdge(edge: Edge): boolean {
  return rules.fileEdges.some((e) => e.from === edge.from && e.to.includes(edge.to));
}

function allowed(edge: Edge): boolean {
  const a = roomOf(edge.from);
  const b = roomOf(edge.to);
  if (a === b) return true;
  if (rules.rooms[a]?.includes(b)) return true;
  return byFileEdge(edge);
}

/** Rooms that reach each other through imports (strongly connected components of more than one room). */
function roomCycles(edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    const a = roomOf(e.from);
    const b = roomOf(e.to);
    if (a === b) continue;
    if (!next.has(a)) next.set(a, new Set());
    next.get(a)!.add(b);
  }
  const reach = (start: string): Set<string> => walk(next.get(start) ?? [], (n) => next.get(n) ?? []);
  const cycles: string[][] = [];
  const placed = new Set<string>();
  for (const room of next.keys()) {
    if (placed.has(room)) continue;
    const fromHere = reach(room);
    const cycle = [...fromHere].filter((other) => other === room || reach(other).has(room));
    if (cycle.length > 1) {
      for (const r of cycle) placed.add(r);
      cycles.push(cycle.sort());
    }
  }
  return cycles;
}

/** Each file's imports (files under src/). */
function fileGraph(edges: Edge[]): Map<string, Set<string>> {
  const next = new Map<string, Set<string>>();
  for (const e of edges) {
    if (!next.has(e.from)) next.set(e.from, new Set());
    next.get(e.from)!.add(e.to);
  }
  return next;
}

/** What `starts` lead to through `next`, the starts included, not going on from those in `stopAt`. */
function walk<T>(
  starts: Iterable<T>,
  next: (n: T) => Iterable<T>,
  stopAt: ReadonlySet<T> = new Set(),
): Set<T> {
  const seen = new Set(starts);
  const stack = [...seen];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (stopAt.has(n)) continue;
    for (const m of next(n)) if (!seen.has(m) && seen.add(m)) stack.push(m);
  }
  return seen;
}

/** The files the given files import through any chain (the given files included), not going on from `stopAt`. */
function filesReachedFrom(
  next: Map<string, Set<string>>,
  files: Iterable<string>,
  stopAt?: Set<string>,
): Set<string> {
  return walk(files, (f) => next.get(f) ?? [], stopAt);
}

/** The files a room's files import through any chain, not going on from the files in `stopAt`. */
function filesReached(next: Map<string, Set<string>>, room: string, stopAt?: Set<string>): Set<string> {
  return filesReachedFrom(
    next,
    [...next.keys()].filter((f) => roomOf(f) === room),
    stopAt,
  );
}

/** The rooms the table lets a room reach through chains of imports (its row, their rows, ...). */
function tableReach(room: string): Set<string> {
  return walk(rules.rooms[room] ?? [], (r) => rules.rooms[r] ?? []);
}

/**
 * What a room may reach: the table's reach, and through the file edges of any room in it, their targets'
 * rooms and what each edge says it `reaches` (with the table's reach of those).
 */
function allowedReach(room: string): Set<string> {
  const allowed = tableReach(room);
  const from = new Set([room, ...allowed]);
  for (const e of rules.fileEdges) if (from.has(roomOf(e.from))) for (const r of edgeReach(e)) allowed.add(r);
  return allowed;
}

/**
 * What may be reached through one file edge: its room and the table's reach of it, the rooms of its targets,
 * and the rooms it says it `reaches` (with the table's reach of those).
 */
function edgeReach(edge: ImportRules['fileEdges'][number]): Set<string> {
  const room = roomOf(edge.from);
  const allowed = new Set([room, ...tableReach(room), ...edge.to.map(roomOf)]);
  for (const r of edge.reaches ?? []) for (const reached of [r, ...tableReach(r)]) allowed.add(reached);
  return allowed;
}

/**
 * A room's README.md states its row in one line: `Imports: `a`, `b`.` (the rooms in backticks, comma-separated,
 * a full stop after the last), or `Imports: (nothing).` for a leaf.
 */
const IMPORTS_LINE = /^Imports: (?:\(nothing\)|(`[^`]+`(?:, `[^`]+`)*))\.$/;

/** The rooms a README's Imports line names, or why it has none to read. */
function readmeImports(room: string): string[] | string {
  const file = path.join(SRC, room, 'README.md');
  if (!fs.existsSync(file)) return 'has no README.md';
  const lines = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('Imports:'));
  if (lines.length !== 1) return `has ${lines.length} lines starting "Imports:", not one`;
  const m = IMPORTS_LINE.exec(lines[0]!.trimEnd());
  if (!m)
    return `its Imports line is not of the form \`Imports: \`a\`, \`b\`.\` or \`Imports: (nothing).\`: ${lines[0]}`;
  return m[1] ? [...m[1].matchAll(/`([^`]+)`/g)].map((x) => x[1]!) : [];
}

/** What is wrong with each room's README Imports line, against the JSON's row and the room's real imports. */
function readmeProblems(edges: Edge[]): string[] {
  const problems: string[] = [];
  const folders = fs
    .readdirSync(SRC, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  for (const room of folders) {
    const where = `src/${room}/README.md`;
    const named = readmeImports(room);
    if (typeof named === 'string') {
      problems.push(`${where}: ${named}`);
      continue;
    }
    const row = rules.rooms[room] ?? [];
    for (const r of named.filter((r) => !row.includes(r)))
      problems.push(`${where}: names \`${r}\`, which docs/architecture-imports.json does not give ${room}`);
    for (const r of row.filter((r) => !named.includes(r)))
      problems.push(`${where}: leaves out \`${r}\`, which docs/architecture-imports.json gives ${room}`);
    const unnamed = new Map<string, Edge>();
    for (const e of edges)
      if (roomOf(e.from) === room && roomOf(e.to) !== room && !named.includes(roomOf(e.to)) && !byFileEdge(e))
        unnamed.set(roomOf(e.to), e);
    for (const [r, e] of unnamed)
      problems.push(`${where}: does not name \`${r}\`, which ${room} imports (${e.from} -> ${e.to})`);
  }
  return problems;
}

describe('import direction (docs/architecture.md, "What may import what")', () => {
  const edges = sourceEdges();

  it('finds the imports it checks', () => {
    expect(edges.length).toBeGreaterThan(500);
    // Every room of src/ has a row, and every row names a room that exists.
    const rooms = new Set(edges.map((e) => roomOf(e.from)));
    expect([...rooms].filter((r) => !(r in rules.rooms))).toEqual([]);
    for (const targets of Object.values(rules.rooms))
      for (const t of targets) expect(t in rules.rooms, t).toBe(true);
  });

  it('reads every form of relative reference', () => {
    const text = [
      "import { a } from './a.js';",
      "import type { B } from '../b/b.js';",
      "export * from './c.js';",
      "import '../d/side-effect.js';",
      "const e = await import('./e.js');",
      "const F = new URL('../f/worker-entry.js', import.meta.url);",
      "const g = new URL(\n  '../g/g.js',\n  import.meta.url,\n).href;",
      "const pkg = new URL('../../package.json', import.meta.url);",
      "const h = new URL('https://example.test/x.js');",
    ].join('\n');
    expect(specifiersIn(text)).toEqual([
      './a.js',
      '../b/b.js',
      './c.js',
      '../d/side-effect.js',
      './e.js',
      '../f/worker-entry.js',
      '../g/g.js',
    ]);
  });

  it('has no edge the table does not allow', () => {
    const wrong = edges.filter((e) => !allowed(e)).map((e) => `${e.from} -> ${e.to}`);
    expect(wrong).toEqual([]);
  });

  it('has no cycle between rooms', () => {
    expect(roomCycles(edges)).toEqual([]);
  });

  it('no room reaches, through any chain of imports, a room its row and file edges do not let it', () => {
    const next = fileGraph(edges);
    const wrong: string[] = [];
    for (const room of Object.keys(rules.rooms)) {
      const allowed = allowedReach(room);
      for (const file of filesReached(next, room)) {
        const reached = roomOf(file);
        if (reached !== room && !allowed.has(reached)) wrong.push(`${room} reaches ${file}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('no file edge leads, through any chain, beyond what that edge itself allows', () => {
    // Each edge on its own: another edge of the same room does not widen it.
    const next = fileGraph(edges);
    const wrong: string[] = [];
    for (const edge of rules.fileEdges) {
      const allowed = edgeReach(edge);
      for (const file of filesReachedFrom(next, edge.to))
        if (!allowed.has(roomOf(file))) wrong.push(`${edge.from} -> ${edge.to.join(', ')} reaches ${file}`);
    }
    expect(wrong).toEqual([]);
  });

  it('record reaches neither fleet, sessions nor bundle, and report only through the live export', () => {
    // The recorder does not know the catalog: the composition roots hand it fleet's sidecar writer.
    const next = fileGraph(edges);
    const rooms = (files: Set<string>) => new Set([...files].map(roomOf));
    const reached = rooms(filesReached(next, 'record'));
    for (const never of ['fleet', 'sessions', 'bundle']) expect(reached.has(never), never).toBe(false);
    const liveExport = rules.fileEdges.find((e) => e.from === 'record/live-export.ts')!;
    expect(rooms(filesReached(next, 'record', new Set(liveExport.to))).has('report')).toBe(false);
  });

  it('docs/architecture.md shows the same table', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const start = doc.indexOf('## What may import what');
    const end = doc.indexOf('\n## ', start + 1);
    const section = doc.slice(start, end < 0 ? undefined : end);
    const shown: Record<string, string[]> = {};
    for (const m of section.matchAll(/^\| `([^`]+)` \| ([^|]*) \|$/gm)) {
      shown[m[1]!] = [...m[2]!.matchAll(/`([^`]+)`/g)].map((x) => x[1]!).sort();
    }
    const table = Object.fromEntries(Object.entries(rules.rooms).map(([k, v]) => [k, [...v].sort()]));
    expect(shown).toEqual(table);
  });

  it("every room's README.md states its row in its Imports line", () => {
    expect(readmeProblems(edges)).toEqual([]);
  });
});
