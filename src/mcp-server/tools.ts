/**
 * The server's tools: name, a description written for an agent, the input schema (checked here, before a
 * tool runs) and the schema file of schema/ its structured content follows. `run` turns checked arguments
 * into an answer through SessionsEvidence.
 */
import type { BundleResult } from '../bundle/build.js';
import { type DroppedFile, LEFT_OUT_WORDS } from '../bundle/documents.js';
import { bundleFileList, bundleFilesPhrase } from '../contract/bundle-files.js';
import { openElsewhereWords } from '../report/verdict.js';
import { clipStrings, LIMITS, type SessionsEvidence } from './evidence.js';

/** What a tool answers: structured content, and the content blocks shown beside it. */
export interface ToolAnswer {
  structured: object;
  content: Array<{ type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string }>;
}

export interface ToolDefinition {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** Base name of the schema file in schema/ (`summary` for summary.schema.json). */
  outputSchema: string;
  /** What makes the answer smaller, told when it would be over LIMITS.answerBytes. */
  smaller: string;
  run(evidence: SessionsEvidence, args: Record<string, unknown>): Promise<ToolAnswer>;
}

const SESSION = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  description:
    'A session id from list_sessions, a unique prefix of one, or its dirName (yyyyMMdd-HHmmss-<id>). Never a path.',
};
const SEQ = { type: 'integer', minimum: 1, maximum: 1_000_000_000, description: "The call's number (#seq)." };

function input(properties: Record<string, unknown>, required: string[] = []): Record<string, unknown> {
  return { type: 'object', properties, required, additionalProperties: false };
}

/**
 * `structured` with every recorded string over LIMITS.fieldChars clipped (keys in `keep` have bounds of their
 * own), before the text is made from it: text and structured content say the same.
 */
function bounded<T>(structured: T, keep: readonly string[] = []): T {
  return clipStrings(structured, LIMITS.fieldChars, keep).value;
}

/** A listing's verdict with its status, in the words of `list` and index.html: `FAIL (running)`. */
function verdictWords(s: {
  verdict: string | null;
  status: string | null;
  openElsewhere: { host: string } | null;
}): string {
  const status = s.openElsewhere
    ? ` (${openElsewhereWords(s.openElsewhere)})`
    : s.status === 'open'
      ? ' (running)'
      : s.status === 'aborted'
        ? ' (aborted)'
        : '';
  return `${s.verdict ?? '-'}${status}`;
}

/** The structured content as JSON text too, for clients that show only text content. */
function asText(structured: object): ToolAnswer['content'][number] {
  return { type: 'text', text: JSON.stringify(structured) };
}

/** Files left out named in the bundle tool's text before the rest are only counted. */
const DROPPED_NAMED = 20;

/** Why a file is not in the zip, in the words the bundle's documents use for an image (LEFT_OUT_WORDS). */
function droppedWhy(d: DroppedFile): string {
  if (d.reason === 'no-db') return 'the log snapshot was left out on request';
  if (d.reason === 'no-row') return 'no artifact row of the log names it';
  return LEFT_OUT_WORDS[d.reason];
}

/**
 * The bundle tool's answer in words: the zip, then each file left out with its reason (the same as `dropped`,
 * for a client that shows only text), then the warnings.
 */
export function bundleAnswerText(
  r: Pick<BundleResult, 'bundle' | 'bytes' | 'files' | 'verdict' | 'dropped' | 'warnings'>,
): string {
  const lines = [
    `Wrote ${r.bundle} (${r.bytes} bytes, ${r.files} files; the session's verdict: ${r.verdict}).`,
  ];
  if (r.dropped.length === 0) lines.push('Nothing was left out.');
  else {
    lines.push(`Left out of the zip (${r.dropped.length}):`);
    for (const d of r.dropped.slice(0, DROPPED_NAMED))
      lines.push(`- ${d.path} (${d.reason}): ${droppedWhy(d)}`);
    if (r.dropped.length > DROPPED_NAMED)
      lines.push(`- and ${r.dropped.length - DROPPED_NAMED} more (see dropped)`);
  }
  for (const w of r.warnings) lines.push(`Warning: ${w}`);
  return lines.join('\n');
}

export const TOOLS: readonly ToolDefinition[] = [
  {
    name: 'list_sessions',
    title: 'List recorded sessions',
    description:
      'List recorded MCEC desktop-automation sessions, newest first, from the sessions catalog: id, dirName, scenario, ' +
      'start, duration, call and failure counts, verdict (PASS/FAIL) with its reason, and the fingerprints of its ' +
      'unrecovered failures. Start here: "why did last night\'s run fail?" is list_sessions {verdict: "FAIL", since: "24h", limit: 1}, ' +
      'then get_summary on its id. Filters combine; pages of `limit` (default 20, at most 100): pass nextCursor back as cursor.',
    inputSchema: input({
      verdict: { enum: ['PASS', 'FAIL'], description: 'Only sessions with this verdict.' },
      scenario: {
        type: 'string',
        maxLength: 500,
        description: 'Only sessions of this scenario (exact name).',
      },
      since: {
        type: 'string',
        maxLength: 40,
        description: 'Only sessions started within a duration (30m, 24h, 7d) or since an ISO time.',
      },
      fingerprint: {
        type: 'string',
        maxLength: 200,
        description:
          'Only sessions with an unrecovered failure of this fingerprint (from triage or a listing).',
      },
      limit: { type: 'integer', minimum: 1, maximum: LIMITS.pageMax, description: 'Page size (default 20).' },
      cursor: { type: 'string', maxLength: 400, description: 'nextCursor of the previous page.' },
    }),
    outputSchema: 'session-page',
    smaller: 'ask a smaller limit',
    async run(evidence, args) {
      const page = await evidence.listSessions(args); // clipped per field already (its note counts them)
      // A session more than one dir holds (copies of one run) is a row per dir: each says which dir it is.
      const seen = new Map<string, number>();
      for (const s of page.sessions) seen.set(s.id, (seen.get(s.id) ?? 0) + 1);
      const lines = page.sessions.map((s) =>
        s.error !== undefined
          ? `${s.id}  ${s.dirName}  UNREADABLE: ${s.error}`
          : `${s.id}  ${s.startedAt ?? s.dirName}  ${verdictWords(s)}  ${s.calls} calls, ${s.failures} failures  ${s.scenario ?? ''}${(seen.get(s.id) ?? 0) > 1 ? `  dir ${JSON.stringify(s.dirName)} (copies of one run)` : ''}`,
      );
      const head = `${page.total} session(s) match; showing ${page.sessions.length} after the first ${page.offset}.`;
      return {
        structured: page,
        content: [{ type: 'text', text: [head, ...lines, ...(page.note ? [page.note] : [])].join('\n') }],
      };
    },
  },
  {
    name: 'get_summary',
    title: 'Failure summary of a session',
    description:
      "Why a session passed or failed: the verdict and its reasons, the failing call (tool, error code, category, detail, the next thing to try, redacted arguments, the target window's facts), the last good observation, the last image before the failure and the failing call's own image (their seq is what get_image takes), every failure (recovered or not), warnings, steps and the environment; plus failure-summary.md as Markdown (first maxChars characters, default 16000).",
    inputSchema: input(
      {
        session: SESSION,
        maxChars: {
          type: 'integer',
          minimum: 500,
          maximum: LIMITS.markdownMax,
          description: 'Longest Markdown returned (default 16000).',
        },
      },
      ['session'],
    ),
    outputSchema: 'summary',
    smaller: 'ask a smaller maxChars',
    async run(evidence, args) {
      const facts = bounded(await evidence.summary(args as { session: string; maxChars?: number }), [
        'markdown',
      ]);
      const { markdown, ...rest } = facts;
      return { structured: facts, content: [{ type: 'text', text: markdown }, asText(rest)] };
    },
  },
  {
    name: 'get_call',
    title: 'One recorded call',
    description:
      "One call of a session exactly as the recorder stored it: its arguments, MCEC's result envelope and the stored response (for a server that is not MCEC the response is its answer as it came: read that, its envelope is only the recorder's {ok}) (redacted: secrets and typed text were taken out when recorded; image bytes are replaced by capture-summaries), error code, category, detail and next step, warnings, the images it kept (get_image's index), and its timing. Values over maxBytes (default 16384, at most 262144) come back as a clipped JSON text with a note.",
    inputSchema: input(
      {
        session: SESSION,
        seq: SEQ,
        maxBytes: {
          type: 'integer',
          minimum: 1024,
          maximum: LIMITS.callBytesMax,
          description: 'Largest arguments / envelope / response JSON returned whole (default 16384).',
        },
      },
      ['session', 'seq'],
    ),
    outputSchema: 'call',
    smaller: 'ask a smaller maxBytes',
    async run(evidence, args) {
      const call = bounded(await evidence.call(args as { session: string; seq: number; maxBytes?: number }), [
        'args',
        'envelope',
        'response',
      ]);
      return { structured: call, content: [asText(call)] };
    },
  },
  {
    name: 'get_image',
    title: 'Image of a call',
    description:
      "A screenshot or other image a call kept (capture, the partialResult of a failed capture, ...), as an image downscaled to maxWidth pixels wide (default 480, at most 1600; never enlarged), exactly as stored (masks and redaction included). Use get_summary's suspectImage.seq for the failing call's image and lastImage.seq for the last one before it; index picks among several images of one call.",
    inputSchema: input(
      {
        session: SESSION,
        seq: SEQ,
        index: {
          type: 'integer',
          minimum: 0,
          maximum: 1000,
          description: 'Which image of the call (default 0).',
        },
        maxWidth: {
          type: 'integer',
          minimum: 16,
          maximum: LIMITS.imageWidthMax,
          description: 'Width in pixels to downscale to (default 480).',
        },
      },
      ['session', 'seq'],
    ),
    outputSchema: 'image',
    smaller: 'ask a smaller maxWidth',
    async run(evidence, args) {
      const image = await evidence.image(
        args as { session: string; seq: number; index?: number; maxWidth?: number },
      );
      return {
        structured: bounded(image.facts),
        content: [
          { type: 'image', data: image.data.toString('base64'), mimeType: 'image/png' },
          asText(bounded(image.facts)),
        ],
      };
    },
  },
  {
    name: 'triage',
    title: 'Recurring failures across sessions',
    description:
      'Failures across sessions grouped by fingerprint (tool + error code + category + the detail without volatile numbers + the target window class and process): each group with its count, sessions, first and last seen, newest example (session and seq for get_call), next step, and a trend from the first run in the window to the last (new, rising, falling, steady, once; by failures per run); then flaky scenarios (both PASS and FAIL) and the failure rate per tool. Largest maxGroups groups (default 10, at most 50).',
    inputSchema: input({
      since: {
        type: 'string',
        maxLength: 40,
        description: 'Window: a duration (24h, 7d) or an ISO time (default: all).',
      },
      scenario: { type: 'string', maxLength: 500, description: 'Only sessions of this scenario.' },
      includeRecovered: {
        type: 'boolean',
        description: 'Group recovered failures too (default: only unrecovered).',
      },
      maxGroups: {
        type: 'integer',
        minimum: 1,
        maximum: LIMITS.triageGroupsMax,
        description: 'Groups returned.',
      },
    }),
    outputSchema: 'triage-page',
    smaller: 'ask a smaller maxGroups, or narrow it by since or scenario',
    async run(evidence, args) {
      const page = bounded(await evidence.triage(args));
      return { structured: page, content: [asText(page)] };
    },
  },
  {
    name: 'diff',
    title: 'Compare a run with a passing one',
    description:
      'Compare a session (B, the run under study) with another (against) or, by default, with the latest passing run of its scenario before it (A). Calls are aligned by tool and arguments without volatile values; returns the first divergence (both calls with redacted arguments and outcomes), the `around` aligned pairs on each side of it (default 3, at most 10) with their calls, UI tree differences of aligned queries and screenshot differences (share of changed pixels). Writes nothing.',
    inputSchema: input(
      {
        session: SESSION,
        against: {
          ...SESSION,
          description: 'The reference run (default: the last passing run of the scenario).',
        },
        around: {
          type: 'integer',
          minimum: 0,
          maximum: LIMITS.diffAroundMax,
          description: 'Aligned pairs shown on each side of the first divergence (default 3).',
        },
      },
      ['session'],
    ),
    outputSchema: 'diff-window',
    smaller: 'ask a smaller around',
    async run(evidence, args) {
      const d = bounded(await evidence.diff(args as { session: string; against?: string; around?: number }));
      return { structured: d, content: [asText(d)] };
    },
  },
  {
    name: 'bundle',
    title: 'Build the bug bundle',
    description: `Build a session's bug bundle, a deterministic zip beside the session dir in the sessions dir, and return its path and size, to attach to an issue. It holds ${bundleFilesPhrase(bundleFileList())}. maxBytes drops the oldest images until it fits (max-bytes). An image is also left out when the session dir has no such file (missing), when the file is not the one the log recorded, another size or sha256 (mismatch), or when it is not a whole PNG (damaged); each is in dropped with its reason, the answer's text names them, and the zip's documents name such an image instead of linking it. The only tool that writes.`,
    inputSchema: input(
      {
        session: SESSION,
        images: { type: 'boolean', description: 'Include the images (default true).' },
        maxBytes: {
          type: 'integer',
          minimum: 65_536,
          maximum: 4_294_967_296,
          description: 'Size cap in bytes.',
        },
      },
      ['session'],
    ),
    outputSchema: 'bundle-result',
    smaller: 'the zip is written: see it in the sessions dir',
    async run(evidence, args) {
      const res = bounded(
        await evidence.bundle(args as { session: string; images?: boolean; maxBytes?: number }),
      );
      return { structured: res, content: [{ type: 'text', text: bundleAnswerText(res) }, asText(res)] };
    },
  },
];
