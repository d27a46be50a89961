/** The SQLite session log's schema: one file per session, versioned with `PRAGMA user_version`. */

/** Each entry migrates the log from version `index` to `index + 1`; append, never edit. */
export const MIGRATIONS: readonly string[] = [
  `
  -- One row: who this session is and how it ended.
  CREATE TABLE session (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    session_id       TEXT NOT NULL,            -- the id used in paths (safe form)
    original_id      TEXT,                     -- the id as received when it was not path-safe (escaped, clipped)
    scenario         TEXT,
    started_at       TEXT NOT NULL,            -- ISO 8601 UTC with milliseconds
    ended_at         TEXT,
    status           TEXT NOT NULL CHECK (status IN ('open', 'ended', 'aborted')),
    passed           INTEGER,                  -- explicit verdict from end(): 1, 0 or NULL
    end_reason       TEXT,
    recorder_version TEXT NOT NULL,
    writer_pid       INTEGER,                  -- lets a reader tell a running session from a crashed one
    environment      TEXT NOT NULL DEFAULT '{}',  -- JSON: os, node, recorder, server {name, version}, display, dpi
    last_observation TEXT                      -- JSON: the last good observation, compact
  );

  -- One row per tool call, inserted as 'pending' when the call starts and completed when it returns.
  CREATE TABLE calls (
    seq             INTEGER PRIMARY KEY,       -- order of start within the session, from 1
    tool            TEXT NOT NULL,
    args            TEXT,                      -- redacted JSON; NULL when dropped past maxLogBytes
    rpc_id          TEXT,                      -- JSON-RPC id as JSON text
    transport       TEXT NOT NULL,             -- 'wrap' | 'http' | 'stdio'
    started_at      TEXT NOT NULL,
    ended_at        TEXT,
    duration_ms     REAL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'ok', 'failed', 'fault')),
    ok              INTEGER,
    error_code      TEXT,
    error_category  TEXT,
    error_detail    TEXT,
    output_kind     TEXT,                      -- ToolOutputKind of what the dispatch returned
    envelope        TEXT,                      -- compacted, redacted envelope JSON; NULL when dropped
    response        TEXT,                      -- the raw output's shape when it was not a bare envelope:
                                               -- images replaced by capture summaries, the envelope text block by "[envelope]"
    violations      TEXT,                      -- JSON array of {path, message}
    payload_dropped INTEGER NOT NULL DEFAULT 0 -- 1 when args/envelope were dropped by the log limit
  );
  CREATE INDEX calls_status ON calls (status);
  CREATE INDEX calls_tool ON calls (tool, seq);

  CREATE TABLE warnings (
    id       INTEGER PRIMARY KEY,
    call_seq INTEGER NOT NULL,
    code     TEXT NOT NULL,
    detail   TEXT
  );
  CREATE INDEX warnings_call ON warnings (call_seq);
  CREATE INDEX warnings_code ON warnings (code);

  -- Image bytes taken out of envelopes: one file per distinct sha256, one row per place it was found.
  CREATE TABLE artifacts (
    id          INTEGER PRIMARY KEY,
    call_seq    INTEGER,
    role        TEXT NOT NULL,   -- 'result' | 'partialResult' | 'lastObservation' | 'image-block' | 'nested'
                                 -- (version 3 adds 'host-capture' | 'host-capture-file' | 'host-recording' | 'host-observation')
    json_path   TEXT,            -- where in the output the bytes were
    path        TEXT,            -- relative to the session dir; NULL when not written
    sha256      TEXT,
    bytes       INTEGER,
    width       INTEGER,
    height      INTEGER,
    format      TEXT,
    blank_check TEXT,            -- JSON BlankCheck
    error       TEXT,            -- artifactError: why no file
    created_at  TEXT NOT NULL
  );
  CREATE INDEX artifacts_call ON artifacts (call_seq);
  CREATE INDEX artifacts_sha ON artifacts (sha256);

  -- Everything else that happened: session-start, session-end, step, emergency-stop, truncation,
  -- record-failure, artifact-limit, protocol-fault, exchange, proxy-error.
  CREATE TABLE events (
    id       INTEGER PRIMARY KEY,
    at       TEXT NOT NULL,
    kind     TEXT NOT NULL,
    call_seq INTEGER,
    detail   TEXT                -- JSON
  );
  CREATE INDEX events_kind ON events (kind);
  `,
  `
  -- Every process that has written this log (two recorders can share one MCEC session's dir).
  CREATE TABLE writers (
    id        INTEGER PRIMARY KEY,     -- order of first write; calls.writer and events.writer point here
    token     TEXT NOT NULL UNIQUE,    -- random, one per writer object
    pid       INTEGER NOT NULL,
    host      TEXT NOT NULL,           -- os.hostname(): a pid can only be checked on its own machine
    opened_at TEXT NOT NULL,
    closed_at TEXT                     -- NULL while the writer holds the log open
  );

  -- The next call seq, read and advanced inside each write transaction (BEGIN IMMEDIATE), so seqs from
  -- several writers never collide and follow the order the calls were first written.
  CREATE TABLE log_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    next_seq INTEGER NOT NULL
  );
  INSERT INTO log_state (id, next_seq) SELECT 1, coalesce(max(seq), 0) + 1 FROM calls;

  ALTER TABLE calls ADD COLUMN writer INTEGER;   -- writers.id; NULL in rows from schema version 1
  ALTER TABLE events ADD COLUMN writer INTEGER;
  CREATE INDEX events_kind_writer ON events (kind, writer);
  `,
  `
  -- Evidence files named by paths on the MCEC host (path-only captures, capture file, record GIFs, the
  -- server's capture-summary artifact): the path as the host wrote it. The copy, when one was made, is path.
  ALTER TABLE artifacts ADD COLUMN host_path TEXT;
  `,
  `
  -- Regions masked in an image because they may show a secret (src/mask): JSON [{rect, reason, rule, ...}]
  -- in image pixels. masks_painted: 1 when the file has them painted, 0 when the file is the original
  -- (mask mode on-export: bundles paint them). NULL/NULL for an image without masks.
  ALTER TABLE artifacts ADD COLUMN masks TEXT;
  ALTER TABLE artifacts ADD COLUMN masks_painted INTEGER;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * The counts every layer keeps of a session, under one set of names: the log's aggregates (`SessionStats`),
 * the recorder's live counts (`SessionCounts`) and the summary's (`SummaryCounts`) each add their own.
 */
export interface CallCounts {
  calls: number;
  pending: number;
  warnings: number;
  artifacts: number;
  violations: number;
  droppedPayloads: number;
  recordFailures: number;
  lostCalls: number;
}

/** Row of `calls` as stored. */
export interface CallRow {
  seq: number;
  tool: string;
  args: string | null;
  rpc_id: string | null;
  transport: string;
  started_at: string;
  ended_at: string | null;
  duration_ms: number | null;
  status: 'pending' | 'ok' | 'failed' | 'fault';
  ok: number | null;
  error_code: string | null;
  error_category: string | null;
  error_detail: string | null;
  output_kind: string | null;
  envelope: string | null;
  response: string | null;
  violations: string | null;
  payload_dropped: number;
}

/** Row of `session` as stored. */
export interface SessionRow {
  session_id: string;
  original_id: string | null;
  scenario: string | null;
  started_at: string;
  ended_at: string | null;
  status: 'open' | 'ended' | 'aborted';
  passed: number | null;
  end_reason: string | null;
  recorder_version: string;
  writer_pid: number | null;
  environment: string;
  last_observation: string | null;
}

/** Row of `artifacts` as stored. */
export interface ArtifactRow {
  id: number;
  call_seq: number | null;
  role: string;
  json_path: string | null;
  path: string | null;
  sha256: string | null;
  bytes: number | null;
  width: number | null;
  height: number | null;
  format: string | null;
  blank_check: string | null;
  error: string | null;
  created_at: string;
  /** The file's path on the MCEC host, for host-* roles (version 3; undefined in an older log). */
  host_path?: string | null;
  /** JSON MaskedRegion[] of the image (version 4; undefined in an older log, null without masks). */
  masks?: string | null;
  /** 1: the file has the masks painted; 0: it is the original (mask mode on-export). */
  masks_painted?: number | null;
}

/** Row of `events` as stored. */
export interface EventRow {
  id: number;
  at: string;
  kind: string;
  call_seq: number | null;
  detail: string | null;
}

/** Row of `writers` as stored, with the calls it recorded. */
export interface WriterRow {
  id: number;
  pid: number;
  host: string;
  opened_at: string;
  closed_at: string | null;
  calls: number;
}

/** Row of `warnings` as stored. */
export interface WarningRow {
  id: number;
  call_seq: number;
  code: string;
  detail: string | null;
}
