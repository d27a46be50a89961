/**
 * What the MCP server answers, over one sessions dir: each method takes a tool's checked arguments and
 * returns its structured content (the schema named in tools.ts), built by the library functions the CLI
 * uses. Read-only except `bundle` (which writes the zip beside the session, as `mcec-bundle <id>` does).
 * Every session is found through `resolveSession` (ids, prefixes, dir names only: never a path), every file
 * read is checked to lie inside its session dir, and every answer is bounded (pages, clipped strings, caps).
 */
import fs from 'node:fs';
import path from 'node:path';
import { safeRelativePath } from '../paths/naming.js';
import { clipText } from '../report/summary-facts.js';
import type { ArtifactRow } from '../store/schema.js';
import { resolveSession, type SessionLocation } from '../store/session-reader.js';
import { loadSharp } from '../util/sharp.js';

/** A failure the agent caused or can act on: answered as an MCP tool error (isError), never thrown on. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
}

/** The bounds of every answer. */
export const LIMITS = {
  pageDefault: 20,
  pageMax: 100,
  summaryChars: 2000,
  markdownDefault: 16_000,
  markdownMax: 65_536,
  summaryFailures: 20,
  summarySteps: 20,
  callBytesDefault: 16_384,
  callBytesMax: 262_144,
  callWarnings: 50,
  imageWidthDefault: 480,
  imageWidthMax: 1600,
  triageGroupsDefault: 10,
  triageGroupsMax: 50,
  triageFlaky: 10,
  triageTools: 20,
  triageScenariosPerGroup: 10,
  diffAroundDefault: 3,
  diffAroundMax: 10,
  diffTrees: 5,
  diffScreenshots: 10,
  /** Largest resource text served (report.html of a 10,000-call session is tens of MB). */
  resourceBytes: 2 * 1024 * 1024,
  /**
   * Longest recorded string in an answer (a scenario, a tool name, an error detail, a value deep in a call's
   * arguments): longer ones end in `... [N more chars cut]`. get_call's args/envelope and get_summary's
   * markdown have their own, larger bounds (maxBytes, maxChars).
   */
  fieldChars: 2000,
  /** Longest scenario in a resources/list description. */
  descriptionChars: 200,
  /**
   * Largest answer, as JSON in UTF-8 (a tool's result, text and structured content together, or a resource's
   * contents): well under the 10 MiB an SDK client reads in one message over stdio. An answer that would be
   * larger is an error saying which argument makes it smaller.
   */
  answerBytes: 4 * 1024 * 1024,
} as const;

/**
 * `value` (JSON data) with every string longer than `max` chars clipped with a visible marker (clipText), and
 * how many were; the top-level keys in `keep` are left as they are (they have bounds of their own).
 */
export function clipStrings<T>(
  value: T,
  max: number,
  keep: readonly string[] = [],
): { value: T; clipped: number } {
  let clipped = 0;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      if (v.length <= max) return v;
      clipped++;
      return clipText(v, max);
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object' || Buffer.isBuffer(v)) return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
  };
  const top =
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).map(([k, x]) => [k, keep.includes(k) ? x : walk(x)]))
      : walk(value);
  return { value: top as T, clipped };
}

/** The size of `value` as JSON in UTF-8: what an answer costs on the wire, its envelope aside. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/** The two documents a session offers as resources. */
export const SESSION_DOCUMENTS = ['failure-summary.md', 'report.html'] as const;
export type SessionDocument = (typeof SESSION_DOCUMENTS)[number];

/** A duration (`24h`, `7d`) or an ISO time, as an ISO time; a ToolError for anything else. */
export async function sinceTime(since: string, now = Date.now()): Promise<string> {
  const { parseDuration } = await import('../util/units.js');
  const ms = parseDuration(since);
  if (ms !== null) return new Date(now - ms).toISOString();
  const t = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(since) ? Date.parse(since) : Number.NaN;
  if (!Number.isFinite(t)) {
    throw new ToolError(
      `since must be a duration (24h, 7d) or an ISO time, not ${JSON.stringify(since.slice(0, 40))}`,
    );
  }
  return new Date(t).toISOString();
}

/** The evidence of one sessions dir. */
export class SessionsEvidence {
  readonly sessionsDir: string;

  constructor(sessionsDir: string) {
    this.sessionsDir = path.resolve(sessionsDir);
  }

  /**
   * A session by id, unique id prefix or dir name, by the catalog (the ids list_sessions shows: each log's);
   * a ToolError (not found, ambiguous: copies of one session name their dirs, invalid) otherwise.
   */
  async locate(id: string): Promise<SessionLocation> {
    const { catalogLocations } = await import('../fleet/catalog.js');
    const found = resolveSession(this.sessionsDir, id, await catalogLocations(this.sessionsDir));
    if (found.ok) return found.session;
    throw new ToolError(found.message);
  }

  /** list_sessions: a page of the catalog, newest first. */
  async listSessions(args: {
    verdict?: 'PASS' | 'FAIL';
    scenario?: string;
    since?: string;
    fingerprint?: string;
    limit?: number;
    cursor?: string;
  }) {
    const after = args.cursor === undefined ? null : cursorDirName(args.cursor);
    const limit = args.limit ?? LIMITS.pageDefault;
    const since = args.since === undefined ? undefined : await sinceTime(args.since);
    const { withCatalog } = await import('../fleet/catalog.js');
    const { listingOf } = await import('../sessions/list.js');
    const { total, before, rows } = await withCatalog(this.sessionsDir, ({ catalog }) =>
      catalog.page(
        { verdict: args.verdict, scenario: args.scenario, since, fingerprint: args.fingerprint },
        after,
        limit,
      ),
    );
    let clipped = 0;
    const sessions = rows.map((row) => {
      const listing = listingOf(this.sessionsDir, row);
      listing.fingerprints = listing.fingerprints.slice(0, 20);
      const bounded = clipStrings(listing, LIMITS.fieldChars);
      clipped += bounded.clipped;
      return bounded.value;
    });
    const left = total - before - rows.length;
    const next = left > 0 && rows.length > 0 ? cursorOf(rows[rows.length - 1]!.dir_name) : null;
    const notes = [
      ...(next ? [`${left} more sessions match: call again with cursor "${next}"`] : []),
      ...(clipped > 0 ? [`${clipped} value(s) over ${LIMITS.fieldChars} chars clipped`] : []),
    ];
    return {
      total,
      offset: before,
      sessions,
      nextCursor: next,
      note: notes.length > 0 ? notes.join('; ') : null,
    };
  }

  /** get_summary: the failure summary's facts and its Markdown. */
  async summary(args: { session: string; maxChars?: number }) {
    const session = await this.locate(args.session);
    const { summarizeSession } = await import('../sessions/summarize.js');
    const { renderFailureSummary } = await import('../report/render.js');
    const { summaryFacts } = await import('../report/summary-facts.js');
    const summary = await summarizeSession(session.dir);
    const markdown = await renderFailureSummary(summary);
    return summaryFacts(summary, markdown, {
      failures: LIMITS.summaryFailures,
      steps: LIMITS.summarySteps,
      chars: LIMITS.summaryChars,
      markdownChars: args.maxChars ?? LIMITS.markdownDefault,
    });
  }

  /** get_call: one call as stored (redacted), its large values clipped. */
  async call(args: { session: string; seq: number; maxBytes?: number }) {
    const session = await this.locate(args.session);
    const max = args.maxBytes ?? LIMITS.callBytesDefault;
    const { SessionReader } = await import('../store/session-reader.js');
    const { recoveryForCall } = await import('../report/recovery.js');
    const reader = SessionReader.open(session.dir);
    try {
      return reader.snapshot(() => {
        const row = reader.call(args.seq);
        if (!row) {
          const count = reader.callCount();
          throw new ToolError(
            `session ${session.dirName} has no call #${args.seq} (its calls are #1 to #${count}; get_summary names the failing one)`,
          );
        }
        const cuts: string[] = [];
        const argsValue = jsonWithin(row.args, max);
        if (argsValue.clipped) cuts.push(`args: first ${max} of ${row.args?.length ?? 0} chars`);
        const envelope = jsonWithin(row.envelope, max);
        if (envelope.clipped) {
          cuts.push(`envelope: first ${max} of ${row.envelope?.length ?? 0} chars (maxBytes raises it)`);
        }
        // A server that is not MCEC has no envelope (the stored one is the recorder's reading, {ok}): its
        // answer is the stored response, which is all an agent can read of what it said.
        const response = jsonWithin(row.response, max);
        if (response.clipped) {
          cuts.push(`response: first ${max} of ${row.response?.length ?? 0} chars (maxBytes raises it)`);
        }
        const warnings = reader.warningsOfCall(row.seq);
        if (warnings.length > LIMITS.callWarnings) cuts.push(`warnings: first ${LIMITS.callWarnings}`);
        const violations = jsonWithin(row.violations, 8192);
        return {
          sessionId: session.sessionId,
          dirName: session.dirName,
          seq: row.seq,
          tool: row.tool,
          status: row.status,
          startedAt: row.started_at,
          endedAt: row.ended_at,
          durationMs: row.duration_ms,
          error:
            row.status === 'failed' || row.status === 'fault' || row.status === 'pending'
              ? {
                  code: row.error_code,
                  category: row.error_category,
                  detail: row.error_detail === null ? null : clipText(row.error_detail, LIMITS.summaryChars),
                  recovery: recoveryForCall(row),
                }
              : null,
          args: argsValue.value,
          argsClipped: argsValue.clipped,
          envelope: envelope.value,
          envelopeClipped: envelope.clipped,
          envelopeBytes: row.envelope === null ? 0 : Buffer.byteLength(row.envelope),
          response: response.value,
          responseClipped: response.clipped,
          warnings: warnings.slice(0, LIMITS.callWarnings).map((w) => ({
            code: w.code,
            detail: w.detail === null ? null : clipText(w.detail, LIMITS.summaryChars),
          })),
          images: imagesOf(reader.artifactsOfCall(row.seq)).map((a, index) => ({
            index,
            artifact: a.path!,
            role: a.role,
            width: a.width,
            height: a.height,
            format: a.format,
            bytes: a.bytes,
          })),
          violations: Array.isArray(violations.value) ? (violations.value as unknown[]).slice(0, 50) : [],
          payloadDropped: row.payload_dropped === 1,
          previousSeq: row.seq > 1 ? row.seq - 1 : null,
          nextSeq: reader.call(row.seq + 1) ? row.seq + 1 : null,
          note: cuts.length > 0 ? `cut to stay bounded: ${cuts.join('; ')}` : null,
        };
      });
    } finally {
      reader.close();
    }
  }

  /** get_image: a stored image of a call, downscaled to maxWidth, as PNG bytes and what they are. */
  async image(args: { session: string; seq: number; index?: number; maxWidth?: number }) {
    const session = await this.locate(args.session);
    const { SessionReader } = await import('../store/session-reader.js');
    const reader = SessionReader.open(session.dir);
    let tool: string;
    let images: ArtifactRow[];
    try {
      const row = reader.call(args.seq);
      if (!row) throw new ToolError(`session ${session.dirName} has no call #${args.seq}`);
      tool = row.tool;
      images = imagesOf(reader.artifactsOfCall(args.seq));
    } finally {
      reader.close();
    }
    if (images.length === 0) {
      throw new ToolError(
        `call #${args.seq} (${tool}) of ${session.dirName} kept no image; get_summary's lastImage and suspectImage name calls that did`,
      );
    }
    const index = args.index ?? 0;
    const art = images[index];
    if (!art)
      throw new ToolError(
        `call #${args.seq} kept ${images.length} image(s): index is 0 to ${images.length - 1}`,
      );
    const file = fileInside(session.dir, art.path!);
    const maxWidth = args.maxWidth ?? LIMITS.imageWidthDefault;
    const sharp = await loadSharp();
    let out: { data: Buffer; info: { width: number; height: number } };
    let stored: { width?: number; height?: number };
    try {
      const input = sharp(file, { limitInputPixels: 100_000_000 });
      stored = await input.metadata();
      out = await input
        .resize({ width: maxWidth, withoutEnlargement: true })
        .png({ compressionLevel: 9 })
        .toBuffer({ resolveWithObject: true });
    } catch (err) {
      throw new ToolError(`the image ${art.path} could not be read: ${(err as Error).message}`);
    }
    return {
      data: out.data,
      facts: {
        sessionId: session.sessionId,
        dirName: session.dirName,
        seq: args.seq,
        tool,
        index,
        images: images.length,
        artifact: art.path!,
        role: art.role,
        storedWidth: stored.width ?? out.info.width,
        storedHeight: stored.height ?? out.info.height,
        width: out.info.width,
        height: out.info.height,
        mimeType: 'image/png' as const,
        bytes: out.data.length,
        note:
          (stored.width ?? 0) > out.info.width
            ? `downscaled from ${stored.width}x${stored.height} (maxWidth ${maxWidth})`
            : null,
      },
    };
  }

  /** triage: failure groups across sessions, with its lists cut to the largest entries. */
  async triage(args: { since?: string; scenario?: string; includeRecovered?: boolean; maxGroups?: number }) {
    const since = args.since === undefined ? undefined : await sinceTime(args.since);
    const t = await import('../fleet/triage.js');
    const { withCatalog } = await import('../fleet/catalog.js');
    const rules = t.loadFingerprintRules(path.join(this.sessionsDir, t.RULES_FILE), { optional: true });
    // Awaits the user regexes' thread: a slow regex (up to 30 s) does not stop the other tools' answers.
    const report = await withCatalog(this.sessionsDir, ({ catalog }) =>
      t.triageAsync(catalog, {
        since,
        scenario: args.scenario,
        includeRecovered: args.includeRecovered,
        rules,
        source: { kind: 'sessions', path: this.sessionsDir },
      }),
    );
    const maxGroups = args.maxGroups ?? LIMITS.triageGroupsDefault;
    const omitted = {
      groups: Math.max(0, report.groups.length - maxGroups),
      flaky: Math.max(0, report.flaky.length - LIMITS.triageFlaky),
      tools: Math.max(0, report.tools.length - LIMITS.triageTools),
    };
    const cut = {
      ...report,
      groups: report.groups.slice(0, maxGroups).map((g) => ({
        ...g,
        detail: clipText(g.detail, LIMITS.summaryChars),
        key: clipText(g.key, LIMITS.summaryChars),
        scenarios: g.scenarios.slice(0, LIMITS.triageScenariosPerGroup),
        example: {
          ...g.example,
          detail: g.example.detail === null ? null : clipText(g.example.detail, LIMITS.summaryChars),
        },
      })),
      flaky: report.flaky.slice(0, LIMITS.triageFlaky),
      tools: report.tools.slice(0, LIMITS.triageTools),
      // Copies of a run are rare; a folder of thousands of copied dirs must not flood the answer.
      copies: report.copies.slice(0, LIMITS.triageFlaky),
    };
    const left = Object.entries(omitted).filter(([, n]) => n > 0);
    return {
      report: cut,
      omitted,
      note:
        left.length > 0
          ? `largest entries only; left out: ${left.map(([k, n]) => `${n} ${k}`).join(', ')}`
          : null,
    };
  }

  /** diff: a session against another or the last passing run of its scenario, around the first divergence. */
  async diff(args: { session: string; against?: string; around?: number }) {
    const b = await this.locate(args.session);
    let a: { dir: string; dirName: string };
    if (args.against !== undefined) a = await this.locate(args.against);
    else {
      const { withCatalog } = await import('../fleet/catalog.js');
      const { lastPassOf } = await import('../fleet/diff.js');
      a = await withCatalog(this.sessionsDir, ({ catalog }) => {
        const pass = lastPassOf(catalog, b.dirName);
        if (!pass) {
          const scenario = catalog.session(b.dirName)?.scenario;
          throw new ToolError(
            `no passing run of ${scenario ? `scenario ${JSON.stringify(scenario)}` : 'sessions without a scenario'} started before ${b.dirName}; give against to compare with another session`,
          );
        }
        return { dir: path.join(this.sessionsDir, pass.dir_name), dirName: pass.dir_name };
      });
    }
    if (a.dirName === b.dirName) throw new ToolError('against names the same session: give another one');
    const d = await import('../fleet/diff.js');
    const whole = await d.diffSessions(a.dir, b.dir); // no outDir: nothing is written
    const around = args.around ?? LIMITS.diffAroundDefault;
    const total = whole.aligned.length;
    const centre = whole.firstDivergence?.index ?? Math.max(0, total - 1);
    const from = Math.max(0, centre - around);
    const to = Math.min(total, centre + around + 1);
    const { SessionReader } = await import('../store/session-reader.js');
    const ra = SessionReader.open(a.dir);
    let rb: ReturnType<typeof SessionReader.open>;
    try {
      rb = SessionReader.open(b.dir);
    } catch (err) {
      ra.close(); // a reader may hold a private copy of its log
      throw err;
    }
    let aroundCalls: Array<{ index: number; kind: string; a: unknown; b: unknown }>;
    try {
      aroundCalls = whole.aligned.slice(from, to).map((p, i) => {
        const ca = p.a === null ? undefined : ra.call(p.a);
        const cb = p.b === null ? undefined : rb.call(p.b);
        return {
          index: from + i,
          kind: p.kind,
          a: ca ? d.diffCallOf(ca) : null,
          b: cb ? d.diffCallOf(cb) : null,
        };
      });
    } finally {
      ra.close();
      rb.close();
    }
    const cuts: string[] = [];
    if (from > 0 || to < total) cuts.push(`aligned: pairs ${from} to ${to - 1} of ${total}`);
    if (whole.trees.length > LIMITS.diffTrees)
      cuts.push(`trees: first ${LIMITS.diffTrees} of ${whole.trees.length}`);
    if (whole.screenshots.length > LIMITS.diffScreenshots) {
      cuts.push(`screenshots: first ${LIMITS.diffScreenshots} of ${whole.screenshots.length}`);
    }
    return {
      diff: {
        ...whole,
        aligned: whole.aligned.slice(from, to),
        trees: whole.trees.slice(0, LIMITS.diffTrees).map((t) => ({
          ...t,
          added: t.added.slice(0, 20),
          removed: t.removed.slice(0, 20),
          renamed: t.renamed.slice(0, 20),
          omitted:
            t.omitted +
            Math.max(0, t.added.length - 20) +
            Math.max(0, t.removed.length - 20) +
            Math.max(0, t.renamed.length - 20),
        })),
        screenshots: whole.screenshots.slice(0, LIMITS.diffScreenshots),
      },
      window: { from, to, total },
      around: aroundCalls,
      note: cuts.length > 0 ? `cut to stay bounded: ${cuts.join('; ')}` : null,
    };
  }

  /** bundle: the bug bundle written beside the session dir (its default place, never elsewhere). */
  async bundle(args: { session: string; images?: boolean; maxBytes?: number }) {
    const session = await this.locate(args.session);
    const { buildBundle, bundleResultJson, defaultZipName } = await import('../bundle/build.js');
    const output = path.join(path.dirname(session.dir), defaultZipName(session.dir));
    // One bundle per zip at a time in this process (every HTTP request has its own server, hence module
    // state): two would each report a zip the other then replaced.
    if (bundlesUnderWay.has(output)) {
      throw new ToolError(
        `a bundle of ${session.dirName} is being written to ${output} by another call: wait for that call's answer (it names the zip), then call bundle again if you need other options`,
      );
    }
    bundlesUnderWay.add(output);
    try {
      const before = await imagesInZip(output);
      const result = await buildBundle(session.dir, {
        images: args.images ?? true,
        maxBytes: args.maxBytes,
        // as `mcec-bundle <id>`: report.html beside the log too, the report.html resource
        reportHtmlInSessionDir: true,
      });
      const after = await imagesInZip(output);
      if (before !== null && after !== null && after < before) {
        result.warnings.push(
          `replaced the earlier bundle at ${output}, which held ${before} image(s), with this one holding ${after}: the session dir still has them; call bundle with images: true (and no maxBytes) to write them again`,
        );
      }
      return bundleResultJson(result);
    } finally {
      bundlesUnderWay.delete(output);
    }
  }

  /** A session's failure-summary.md (rendered now) or report.html (as written); bounded. */
  async document(id: string, name: SessionDocument): Promise<{ text: string; mimeType: string }> {
    const session = await this.locate(id);
    if (name === 'failure-summary.md') {
      const { failureSummaryText } = await import('../sessions/summarize.js');
      const text = await failureSummaryText(session.dir);
      return { text: clipText(text, LIMITS.resourceBytes), mimeType: 'text/markdown' };
    }
    const file = reportHtmlOf(session.dir);
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile()) {
      throw new ToolError(
        `${session.dirName} has no report.html yet: call the bundle tool on ${session.sessionId} (it writes report.html beside the log, as mcec-bundle ${session.sessionId} does) or run mcec-bundle report ${session.sessionId}, then read this resource again`,
      );
    }
    if (stat.size > LIMITS.resourceBytes) {
      throw new ToolError(
        `${session.dirName}/report.html is ${stat.size} bytes, over the ${LIMITS.resourceBytes} served; open ${file} in a browser`,
      );
    }
    return { text: fs.readFileSync(file, 'utf8'), mimeType: 'text/html' };
  }

  /** Sessions for resources/list, newest first, one page after the cursor's (a cursor from cursorOf). */
  async documentsPage(
    cursor: string | undefined,
    limit: number,
  ): Promise<{ rows: SessionLocationLite[]; next: string | null }> {
    const after = cursor === undefined ? null : cursorDirName(cursor);
    const { withCatalog } = await import('../fleet/catalog.js');
    const { total, before, rows } = await withCatalog(this.sessionsDir, ({ catalog }) =>
      catalog.page({}, after, limit),
    );
    return {
      rows: rows.map((r) => ({
        dirName: r.dir_name,
        sessionId: r.session_id,
        scenario: r.scenario === null ? null : clipText(r.scenario, LIMITS.descriptionChars),
        verdict: r.verdict,
        reportHtml:
          fs
            .lstatSync(reportHtmlOf(path.join(this.sessionsDir, r.dir_name)), {
              throwIfNoEntry: false,
            })
            ?.isFile() === true,
      })),
      next:
        before + rows.length < total && rows.length > 0 ? cursorOf(rows[rows.length - 1]!.dir_name) : null,
    };
  }
}

/** The zips a `bundle` call is writing now, in this process (exported for the test of a refusal). */
export const bundlesUnderWay = new Set<string>();

/** How many images (entries under artifacts/) the zip at `file` holds; null when there is none or it cannot be read. */
async function imagesInZip(file: string): Promise<number | null> {
  if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) return null;
  const { openZip, zipEntries, entryName } = await import('../bundle/zip-read.js');
  try {
    const zip = await openZip(file);
    let images = 0;
    try {
      for await (const entry of zipEntries(zip)) {
        const name = entryName(entry);
        if (name.split('/')[1] === 'artifacts' && !name.endsWith('/')) images++;
      }
    } finally {
      zip.close();
    }
    return images;
  } catch {
    return null; // not a zip we can read: nothing to compare with
  }
}

/** What resources/list names of a session. */
export interface SessionLocationLite {
  dirName: string;
  sessionId: string;
  scenario: string | null;
  verdict: string | null;
  /** Whether its report.html exists (the resource is listed only then). */
  reportHtml: boolean;
}

/** Where a session's report.html is written (by `mcec-bundle report`). */
function reportHtmlOf(sessionDir: string): string {
  return path.join(sessionDir, 'report.html');
}

/** The cursor of a page that ended on `dirName`: the dir name, base64url (opaque, no path characters). */
export function cursorOf(dirName: string): string {
  return Buffer.from(dirName, 'utf8').toString('base64url');
}

/** A page cursor this server handed out back to its dir name; a ToolError for anything else. */
export function cursorDirName(cursor: string): string {
  const dirName = /^[A-Za-z0-9_-]{1,400}$/.test(cursor)
    ? Buffer.from(cursor, 'base64url').toString('utf8')
    : '';
  if (dirName === '' || cursorOf(dirName) !== cursor || /[/\\\0]/.test(dirName))
    throw new ToolError(`cursor ${JSON.stringify(cursor.slice(0, 40))} is not one this server gave`);
  return dirName;
}

/** A stored JSON text as a value when it fits `max` chars, else its first `max` chars as a string. */
function jsonWithin(text: string | null, max: number): { value: unknown; clipped: boolean } {
  if (text === null) return { value: null, clipped: false };
  if (text.length > max) return { value: `${text.slice(0, max)}...`, clipped: true };
  try {
    return { value: JSON.parse(text) as unknown, clipped: false };
  } catch {
    return { value: text, clipped: false };
  }
}

/** A call's artifact rows that have a file, one per file (a file can be referred to from several places). */
function imagesOf<T extends { path: string | null; error: string | null }>(rows: T[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const r of rows) {
    if (!r.path || r.error || seen.has(r.path)) continue;
    seen.add(r.path);
    out.push(r);
  }
  return out;
}

/** `rel` resolved inside `dir` as a regular file (no `..`, no absolute path, no symlink); a ToolError otherwise. */
function fileInside(dir: string, rel: string): string {
  const safe = safeRelativePath(rel);
  if (safe === null)
    throw new ToolError(
      `the stored image path ${JSON.stringify(rel.slice(0, 80))} is not inside the session`,
    );
  const file = path.join(dir, safe);
  const stat = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!stat?.isFile()) throw new ToolError(`the image file ${safe} is missing from the session dir`);
  const real = fs.realpathSync(file);
  const base = fs.realpathSync(dir);
  if (!real.startsWith(base + path.sep))
    throw new ToolError(`the image file ${safe} is not inside the session`);
  return file;
}
