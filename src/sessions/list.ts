/**
 * `mcec-bundle list`: the sessions of a sessions dir from its catalog (refreshed first). Light to import,
 * so `list` of 10,000 sessions starts about as fast as `node` and one SQLite query.
 */
import path from 'node:path';
import { withCatalog } from '../fleet/catalog.js';
import type { Verdict } from '../report/types.js';
import type { Catalog, CatalogSession } from '../store/catalog.js';
import {
  expectBoolean,
  expectFunction,
  expectNonEmptyString,
  expectOptions,
  expectString,
} from '../util/expect.js';

/** One line of `mcec-bundle list` (`schema/session-listing.schema.json`): a catalog row. */
export interface SessionListing {
  id: string;
  dirName: string;
  dir: string;
  scenario: string | null;
  /** The MCP server's name from its initialize answer (MCEC, or another server's), null when not recorded. */
  server: string | null;
  /** The machine that recorded it (its first writer's host name), null when the log does not say. */
  host: string | null;
  startedAt: string | null;
  endedAt: string | null;
  durationMs: number | null;
  duration: string;
  calls: number;
  failures: number;
  recovered: number;
  pending: number;
  status: 'open' | 'ended' | 'aborted' | null;
  /**
   * Set when `status` is `aborted` because the log is still open on another host, whose writer never closed
   * it and cannot be checked from here; null otherwise.
   */
  openElsewhere: { host: string } | null;
  verdict: Verdict | null;
  verdictReason: string | null;
  /** Fingerprints of its unrecovered failures by the built-in rules, oldest first (src/fleet/fingerprint.ts). */
  fingerprints: string[];
  /** Set when the log could not be read; the other fields are then from the dir name only. */
  error?: string;
}

/** What `list` is asked: only FAIL sessions; where warnings go; progress of a long catalog refresh. */
export interface ListOptions {
  failedOnly?: boolean;
  /** Only sessions started (else last active) at or after this ISO time, as triage's `since`. */
  since?: string;
  onWarning?: (message: string) => void;
  /** Sessions read so far of those the catalog had to read (a first `list` of thousands takes seconds). */
  onProgress?: (done: number, total: number) => void;
}

/** A catalog row as `list` shows it. */
export function listingOf(sessionsDir: string, row: CatalogSession): SessionListing {
  let fingerprints: string[] = [];
  try {
    const parsed = JSON.parse(row.fingerprints) as unknown;
    if (Array.isArray(parsed)) fingerprints = parsed.filter((f): f is string => typeof f === 'string');
  } catch {
    // a damaged cell lists no fingerprints
  }
  const out: SessionListing = {
    id: row.session_id,
    dirName: row.dir_name,
    dir: path.join(sessionsDir, row.dir_name),
    scenario: row.scenario,
    server: row.server,
    host: row.host,
    startedAt: row.error !== null ? null : row.started_at,
    endedAt: row.ended_at,
    durationMs: row.duration_ms,
    duration: row.duration,
    calls: row.calls,
    failures: row.failures,
    recovered: row.recovered,
    pending: row.pending,
    status: row.status,
    openElsewhere: row.unchecked_host === null ? null : { host: row.unchecked_host },
    verdict: row.verdict,
    verdictReason: row.verdict_reason,
    fingerprints,
  };
  if (row.error !== null) out.error = row.error;
  return out;
}

/**
 * Every session under `sessionsDir` that holds a tool call (or cannot be read), newest first (as index.html),
 * with its verdict; `failedOnly` keeps FAIL ones. Read from the catalog (`catalog.sqlite`), refreshed first.
 */
export async function listSessionSummaries(
  sessionsDir: string,
  options: ListOptions = {},
): Promise<SessionListing[]> {
  expectNonEmptyString(sessionsDir, 'sessionsDir');
  const o = expectOptions(options);
  expectBoolean(o.failedOnly, 'options.failedOnly');
  expectString(o.since, 'options.since', { nonEmpty: true });
  expectFunction(o.onWarning, 'options.onWarning');
  expectFunction(o.onProgress, 'options.onProgress');
  const rows: CatalogSession[] = await withCatalog(
    sessionsDir,
    ({ catalog, warning }) => {
      if (warning) options.onWarning?.(warning);
      if (options.onWarning) warnOfCopies(catalog.copies(), options.onWarning);
      return catalog.sessions({
        ...(options.failedOnly ? { verdict: 'FAIL' as const } : {}),
        ...(options.since === undefined ? {} : { since: options.since }),
      });
    },
    { onRebuild: options.onWarning, onProgress: options.onProgress },
  );
  const out: SessionListing[] = [];
  for (const row of rows.reverse()) {
    // A session without a tool call is not a run (the recorder writes none; older versions did).
    if (row.error === null && row.calls === 0) continue;
    out.push(listingOf(sessionsDir, row));
  }
  return out;
}

type CatalogCopies = ReturnType<Catalog['copies']>;

/**
 * One warning per session that more than one dir holds (copies: the same log id and start), naming the dirs:
 * each is listed, and its id alone no longer picks one (`show <id>` is ambiguous).
 */
function warnOfCopies(copies: CatalogCopies, onWarning: ((message: string) => void) | undefined): void {
  if (!onWarning) return;
  for (const c of copies) {
    onWarning(
      `session ${c.session_id} is in ${c.dir_names.length} dirs (copies of one session), each listed: ` +
        `${c.dir_names.map((d) => JSON.stringify(d)).join(', ')}; give a dir's name or path to pick one`,
    );
  }
}

/** The `list` table's column headers. */
const LIST_HEADER = ['ID', 'SERVER', 'START (UTC)', 'DURATION', 'CALLS', 'FAILURES', 'VERDICT'] as const;

/**
 * The `list` table as text (ID, SERVER, START, DURATION, CALLS, FAILURES, VERDICT), newest first, or '' when there is
 * no session; when a session is in more than one dir (copies), a last column DIR names the dir of each of its
 * rows. SQLite renders each line (Catalog.listTable): the fast path of `list`. Under it, one line per
 * UNREADABLE session saying why (the log's path and SQLite's error).
 */
export async function sessionTable(sessionsDir: string, options: ListOptions = {}): Promise<string> {
  return withCatalog(
    sessionsDir,
    ({ catalog, warning }) => {
      if (warning) options.onWarning?.(warning);
      const copies = catalog.copies();
      warnOfCopies(copies, options.onWarning);
      // Rows of one session share an ID: a last column DIR tells them apart (none without copies).
      const table = catalog.listTable(LIST_HEADER, {
        failedOnly: options.failedOnly,
        since: options.since,
        dirNames: copies.flatMap((c) => c.dir_names),
        dirHeader: 'DIR',
      });
      const reasons = catalog.unreadable({ failedOnly: options.failedOnly, since: options.since });
      if (table === '' || reasons.length === 0) return table;
      return `${table}\n\n${reasons.map((r) => `UNREADABLE ${r.session_id}: ${r.error}`).join('\n')}`;
    },
    { onRebuild: options.onWarning, onProgress: options.onProgress },
  );
}
