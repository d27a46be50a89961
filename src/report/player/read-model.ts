/**
 * The player's model read from the log on a pass of its own: the bundle reads it first, so run.gif is drawn
 * while report.html's rows are measured, and the page is handed the same model instead of collecting it.
 */
import { safeRelativePath } from '../../paths/naming.js';
import type { ArtifactRow } from '../../store/schema.js';
import type { SessionReader } from '../../store/session-reader.js';
import { CallJson } from '../call-json.js';
import { summarizeCall } from '../summarize-call.js';
import type { SessionSummary } from '../types.js';
import { PlayerCollector, type PlayerInputs, type PlayerModel } from './model.js';

/** The server's version (from the session's environment), which decides how target pixels are read. */
export function serverVersionOf(summary: SessionSummary): string | null {
  const server = summary.environment.server;
  if (!server || typeof server !== 'object') return null;
  const version = (server as Record<string, unknown>).version;
  return typeof version === 'string' ? version : null;
}

/**
 * The model as report.html's rows pass collects it (the same inputs, the same rows in seq order): the
 * artifact rows, then the calls with only the columns the collector reads. With `lines`, each call's summary
 * line (`summarizeCall`) is put there by seq, from the JSON the collector parsed: report.html's rows pass is
 * handed them (`PageMode.lines`) and parses no call's JSON again.
 */
export function readPlayerModel(
  reader: SessionReader,
  summary: SessionSummary,
  lines?: Map<number, string>,
): PlayerModel {
  const collector = new PlayerCollector(playerInputs(reader.artifacts(), summary));
  for (const row of reader.calls({ columns: 'player' })) {
    const json = new CallJson(row);
    collector.add(row, json);
    lines?.set(row.seq, summarizeCall(row, json));
  }
  return collector.finish();
}

/** Artifacts per call and each image's first call, keyed by the image's path in the session dir. */
function playerInputs(artifacts: readonly ArtifactRow[], summary: SessionSummary): PlayerInputs {
  const artifactsBySeq = new Map<number, ArtifactRow[]>();
  const firstSeqOfImage = new Map<string, number>();
  for (const a of artifacts) {
    if (a.call_seq == null) continue;
    const list = artifactsBySeq.get(a.call_seq);
    if (list) list.push(a);
    else artifactsBySeq.set(a.call_seq, [a]);
    const key = safeRelativePath(a.path);
    if (key && !firstSeqOfImage.has(key)) firstSeqOfImage.set(key, a.call_seq);
  }
  return {
    artifactsBySeq,
    firstSeqOfImage,
    keyOf: (a) => safeRelativePath(a.path),
    serverVersion: serverVersionOf(summary),
    failingSeq: summary.failingCall?.seq ?? null,
  };
}
