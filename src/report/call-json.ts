/**
 * A call row's stored JSON (arguments, envelope), each parsed at most once: report.html's pass hands the same
 * one to the row's summary line and to the player's model. Readers treat the values as read-only.
 */
import type { CallRow } from '../store/schema.js';

/** Text longer than this is not parsed (the summarizer's limit for an envelope; callers may cap lower). */
export const MAX_PARSED_CHARS = 32 * 1024 * 1024;

const UNREAD = Symbol('unread');

/** The parsed JSON of one call row, read lazily. */
export class CallJson {
  private argsValue: unknown = UNREAD;
  private envelopeValue: unknown = UNREAD;

  constructor(readonly row: CallRow) {}

  /** `row.args` parsed, or undefined when absent, longer than `maxChars` or not JSON. */
  args(maxChars = MAX_PARSED_CHARS): unknown {
    if (this.row.args == null || this.row.args.length > maxChars) return undefined;
    if (this.argsValue === UNREAD) this.argsValue = parse(this.row.args);
    return this.argsValue;
  }

  /** `row.envelope` parsed, or undefined when absent, longer than `maxChars` or not JSON. */
  envelope(maxChars = MAX_PARSED_CHARS): unknown {
    if (this.row.envelope == null || this.row.envelope.length > maxChars) return undefined;
    if (this.envelopeValue === UNREAD) this.envelopeValue = parse(this.row.envelope);
    return this.envelopeValue;
  }
}

function parse(text: string): unknown {
  if (text.length > MAX_PARSED_CHARS) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
