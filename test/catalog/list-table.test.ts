/**
 * The `list` table as SQLite renders it (Catalog.listTable): every listed session on one line, columns
 * padded to the widest cell in characters, the running/aborted/unreadable states, and nothing else.
 */
import { describe, expect, it } from 'vitest';
import { Catalog, type CatalogSession } from '../../src/store/catalog.js';
import { catalogSession as session } from './helpers.js';

const HEADER = ['ID', 'SERVER', 'START (UTC)', 'DURATION', 'CALLS', 'FAILURES', 'VERDICT'];

/** The table as list wrote it in JavaScript before SQLite rendered it: the reference. */
function referenceTable(rows: CatalogSession[]): string {
  const shown = rows
    .filter((r) => r.calls > 0 || r.error !== null)
    .sort((a, b) => (a.dir_name < b.dir_name ? 1 : -1)) // newest first
    .map((r) => [
      r.session_id,
      r.server ?? '-',
      r.started_at ? `${r.started_at.slice(0, 10)} ${r.started_at.slice(11, 19)}Z` : r.dir_name.slice(0, 15),
      r.duration || '-',
      String(r.calls),
      String(r.failures),
      r.error !== null
        ? 'UNREADABLE'
        : `${r.verdict ?? '-'}${r.status === 'open' ? ' (running)' : r.status === 'aborted' ? ' (aborted)' : ''}`,
    ]);
  if (shown.length === 0) return '';
  const all = [HEADER, ...shown];
  const widths = HEADER.slice(0, 6).map((_, i) => Math.max(...all.map((cells) => [...cells[i]!].length)));
  return all
    .map((cells) => cells.map((c, i) => (i < 6 ? c + ' '.repeat(widths[i]! - [...c].length) : c)).join('  '))
    .join('\n');
}

function catalogOf(rows: CatalogSession[]): Catalog {
  const catalog = Catalog.memory();
  catalog.put(
    rows.map((s) => ({ entry: { session: s, failures: [], tools: [] }, touched: 0, dirMtime: null })),
  );
  return catalog;
}

describe('Catalog.listTable', () => {
  const rows = [
    session({ dir_name: '20261125-101500-aaaaaaaaaaaa', session_id: 'aaaaaaaaaaaa' }),
    session({
      dir_name: '20261125-101400-long-session-id-from-a-client',
      session_id: 'long-session-id-from-a-client',
      status: 'open',
      verdict: 'FAIL',
      calls: 12345,
      failures: 17,
      duration: '',
    }),
    session({
      dir_name: '20261125-101600-cccccccccccc',
      session_id: 'cccccccccccc',
      status: 'aborted',
      verdict: 'FAIL',
      duration: '3 h 2 min',
    }),
    session({
      dir_name: '20261125-101700-dddddddddddd',
      session_id: 'dddddddddddd',
      // As unreadableEntry has it: the start its dir name's stamp says (UTC).
      started_at: '2026-11-25T10:17:00.000Z',
      error: 'file is not a database',
      calls: 0,
      verdict: null,
    }),
    session({ dir_name: '20261125-101800-eeeeeeeeeeee', session_id: 'eeeeeeeeeeee', calls: 0 }),
    session({ dir_name: '20261125-101900-éééééééééééé', session_id: 'éééééééééééé', verdict: null }),
    session({
      dir_name: '20261125-102000-mcp-servers-everything-5b6f0c1e9a2d4f7b',
      session_id: 'mcp-servers-everything-5b6f0c1e9a2d4f7b',
      server: 'mcp-servers/everything',
    }),
    session({ dir_name: '20261125-102100-ffffffffffff', session_id: 'ffffffffffff', server: null }),
  ];

  it('renders what the JavaScript table rendered: order, widths in characters, states', () => {
    const catalog = catalogOf(rows);
    try {
      const table = catalog.listTable(HEADER);
      expect(table).toBe(referenceTable(rows));
      const lines = table.split('\n');
      expect(lines).toHaveLength(8); // the header and seven sessions: one without a call is not a run
      expect(lines.at(-1)).toMatch(
        /^long-session-id-from-a-client +MCEC +2026-11-25 10:15:00Z {2}- +12345 {2}17 +FAIL \(running\)$/,
      );
      // Each run names its server (a run of another MCP server is recognisable), '-' when not recorded.
      expect(lines.find((l) => l.startsWith('mcp-servers'))).toMatch(
        /^mcp-servers-everything-\S+ {2}mcp-servers\/everything {2}2026/,
      );
      expect(lines.find((l) => l.startsWith('ffff'))).toMatch(/^f{12} +- +2026/);
      expect(lines.find((l) => l.startsWith('dddd'))).toMatch(
        /^dddddddddddd +MCEC +2026-11-25 10:17:00Z .* UNREADABLE$/,
      );
      expect(lines.find((l) => l.startsWith('cccc'))).toMatch(/FAIL \(aborted\)$/);
      expect(lines.find((l) => l.startsWith('é'))).toMatch(/^é{12} {29}MCEC/);
    } finally {
      catalog.close();
    }
  });

  it('keeps only FAIL sessions when asked, and is empty when none is listed', () => {
    const catalog = catalogOf(rows);
    try {
      const failed = catalog.listTable(HEADER, { failedOnly: true }).split('\n');
      expect(failed.slice(1).map((l) => l.split(' ')[0])).toEqual([
        'cccccccccccc',
        'long-session-id-from-a-client',
      ]);
    } finally {
      catalog.close();
    }
    const empty = catalogOf([rows[4]!]);
    try {
      expect(empty.listTable(HEADER)).toBe('');
    } finally {
      empty.close();
    }
  });
});
