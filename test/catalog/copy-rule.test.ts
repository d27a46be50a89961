/**
 * The one rule that tells a session's copies from its own dir, written twice: `isOwnSessionDir` and
 * `oneDirPerSession` (src/paths/naming.ts: triage, junit, export, prune) and the catalog's SQL for its partial
 * index (`Catalog.copies()`: list's warning and DIR column). Both must name the same copies.
 */
import { describe, expect, it } from 'vitest';
import { isOwnSessionDir, oneDirPerSession } from '../../src/paths/naming.js';
import { Catalog, type CatalogSession } from '../../src/store/catalog.js';
import { catalogSession as session } from './helpers.js';

const START = '2026-11-25T10:15:00.123Z';
const OWN = '20261125-101500-aaaaaaaaaaaa';

const rows: CatalogSession[] = [
  session({ dir_name: OWN, session_id: 'aaaaaaaaaaaa', started_at: START }),
  session({ dir_name: `${OWN} (2)`, session_id: 'aaaaaaaaaaaa', started_at: START }),
  session({ dir_name: `${OWN} - Copy`, session_id: 'aaaaaaaaaaaa', started_at: START }),
  // Renamed to another stamp: a dir of its own name that is not this session's own name.
  session({ dir_name: '20261125-101501-bbbbbbbbbbbb', session_id: 'bbbbbbbbbbbb', started_at: START }),
  session({ dir_name: 'bbbb kept', session_id: 'bbbbbbbbbbbb', started_at: START }),
  // The same id started at another time: another run, not a copy.
  session({
    dir_name: '20261125-111500-aaaaaaaaaaaa',
    session_id: 'aaaaaaaaaaaa',
    started_at: '2026-11-25T11:15:00.000Z',
  }),
  // Unreadable logs: no start, known by their names; never anyone's copy.
  session({
    dir_name: '20261125-120000-cccccccccccc',
    session_id: 'cccccccccccc',
    started_at: null,
    error: 'x',
  }),
  session({ dir_name: 'cccccccccccc', session_id: 'cccccccccccc', started_at: null, error: 'x' }),
];

describe('the copy rule', () => {
  it('isOwnSessionDir: the name the recorder gives the log, else by the name when the start is unknown', () => {
    const own = rows
      .filter((r) =>
        isOwnSessionDir({ dirName: r.dir_name, sessionId: r.session_id, startedAt: r.started_at }),
      )
      .map((r) => r.dir_name);
    expect(own).toEqual([OWN, '20261125-111500-aaaaaaaaaaaa', '20261125-120000-cccccccccccc']);
  });

  it('oneDirPerSession keeps the own dir, else the first, and agrees with Catalog.copies()', () => {
    const { kept, copies } = oneDirPerSession(rows, (r) => ({
      dirName: r.dir_name,
      sessionId: r.session_id,
      startedAt: r.started_at,
    }));
    expect(copies).toEqual([
      { sessionId: 'aaaaaaaaaaaa', dirNames: [OWN, `${OWN} (2)`, `${OWN} - Copy`] },
      { sessionId: 'bbbbbbbbbbbb', dirNames: ['20261125-101501-bbbbbbbbbbbb', 'bbbb kept'] },
    ]);
    expect(kept.map((r) => r.dir_name)).toEqual([
      OWN,
      '20261125-101501-bbbbbbbbbbbb',
      '20261125-111500-aaaaaaaaaaaa',
      '20261125-120000-cccccccccccc',
      'cccccccccccc',
    ]);
    const catalog = Catalog.memory();
    try {
      catalog.put(
        rows.map((s) => ({ entry: { session: s, failures: [], tools: [] }, touched: 0, dirMtime: null })),
      );
      const sorted = (c: Array<{ dirNames: string[] }>) => c.map((x) => [...x.dirNames].sort()).sort();
      expect(sorted(catalog.copies().map((c) => ({ dirNames: c.dir_names })))).toEqual(sorted(copies));
    } finally {
      catalog.close();
    }
  });
});
