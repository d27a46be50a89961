/** One timeline row's template context: the call's summary line, its warnings and images, and clipped bodies. */
import type { CallRow } from '../../store/schema.js';
import { groupThousands } from '../../util/units.js';
import { categoryLine, recoveryForCall } from '../recovery.js';
import { clip, oneLine } from '../text.js';
import { formatDurationMs } from '../time.js';
import { prettyJson } from './pretty-json.js';
import { type HandlebarsApi, textHtml } from './template.js';
import type { Thumbnail } from './thumbnails.js';

/** Below this allowance a call's bodies are left out rather than clipped to nothing useful. */
export const MIN_BODY_CHARS = 240;

/** A thumbnail in a row, linked to its full image. */
export type RowThumb = Thumbnail & { href: string; label: string };

/** One masked region drawn as a labelled box (image pixels; the label's place and size). */
export interface MaskBox {
  x: number;
  y: number;
  w: number;
  h: number;
  tx: number;
  ty: number;
  fs: number;
  /** `masked: typed secret`. */
  label: string;
  /** The whole story: reason, rule, what it covers, why it was widened. */
  title: string;
}

/** Where an image's regions were masked and why, drawn over its thumbnail when the row has one. */
export interface MaskMap {
  width: number;
  height: number;
  thumb: string | null;
  label: string;
  boxes: MaskBox[];
}

/** An image line in a row's body. */
export interface RowImage {
  href: string | null;
  label: string;
  note: string;
  mask?: MaskMap | null;
}

/** What rendering a row's bodies did. */
export interface RowCounters {
  clipped: number;
  omitted: number;
  bodyChars: number;
}

/** Everything a row shows besides the stored call. */
export interface RowInput {
  row: CallRow;
  /** The one-line summary (from the report's summarizer). */
  line: string;
  recovered: boolean;
  isFailing: boolean;
  isLastGood: boolean;
  /** The session is of another MCP server: its calls carry no envelope. */
  plainServer?: boolean;
  warnings: Array<{ code: string; detail: string }>;
  thumbs: RowThumb[];
  images: RowImage[];
}

function violationCount(stored: string | null): number {
  if (!stored || stored.length > 1_000_000) return 0;
  try {
    const parsed = JSON.parse(stored) as unknown;
    return Array.isArray(parsed) ? parsed.length : 0;
  } catch {
    return 0;
  }
}

/** The template context of one row, its arguments/envelope/response clipped to `allowance` characters in all. */
export function rowContext(
  hb: HandlebarsApi,
  input: RowInput,
  allowance: number,
  counters: RowCounters,
): Record<string, unknown> {
  const { row } = input;
  const blocks: Array<{ title: string; html: unknown; note: string | null }> = [];
  let bodyNote: string | null = null;
  let hidden = '';
  const hasBodies = row.args != null || row.envelope != null || row.response != null;
  if (row.payload_dropped) {
    bodyNote = "The recorder dropped this call's arguments/envelope (past its log size limit).";
  }
  if (hasBodies && allowance < MIN_BODY_CHARS) {
    counters.omitted += 1;
    hidden = 'envelope not shown (page size limit)';
  } else if (hasBodies) {
    let left = allowance;
    let clippedHere = false;
    const add = (title: string, stored: string | null, max: number) => {
      const pretty = prettyJson(stored, Math.max(0, max));
      if (!pretty) return;
      left -= pretty.text.length;
      counters.bodyChars += pretty.text.length;
      let note: string | null = null;
      if (pretty.clipped > 0) {
        clippedHere = true;
        note = `Clipped: ${groupThousands(pretty.clipped)} more characters are in session.sqlite and tool-calls.jsonl.`;
      }
      blocks.push({ title, html: textHtml(hb, pretty.text), note });
    };
    add('Arguments', row.args, Math.floor(allowance * 0.3));
    // Another MCP server sent no envelope: the stored one is the recorder's reading; its result is the response.
    if (!input.plainServer) add('Envelope', row.envelope, left);
    if (row.response != null && left >= MIN_BODY_CHARS) {
      add(`Response (${oneLine(row.output_kind ?? 'transport', 40)} shape)`, row.response, left);
    }
    if (row.violations != null && row.violations !== '[]') {
      add('Contract violations', row.violations, Math.max(left, 2000));
    }
    if (clippedHere) counters.clipped += 1;
  }
  return {
    seq: row.seq,
    tool: oneLine(row.tool, 80),
    status: row.status,
    recovered: input.recovered,
    isFailing: input.isFailing,
    isLastGood: input.isLastGood,
    at: row.started_at,
    time: row.started_at.length >= 23 ? row.started_at.slice(11, 23) : row.started_at,
    duration: formatDurationMs(row.duration_ms),
    line: textHtml(hb, input.line),
    code: row.error_code ? oneLine(row.error_code, 120) : '',
    category: categoryLine(row) ?? '',
    detail: row.error_detail ? clip(row.error_detail, 2000) : '',
    recovery: recoveryForCall(row),
    warnings: input.warnings,
    warnCodes: input.warnings.map((w) => w.code).join(' '),
    violationCount: violationCount(row.violations),
    thumbs: input.thumbs,
    images: input.images,
    blocks,
    bodyNote,
    transport: row.transport,
    rpcId: row.rpc_id ? oneLine(row.rpc_id, 60) : '',
    hidden,
  };
}
