/** Splitting a byte stream into newline-delimited lines for recording, each held only up to a cap. */

import { BoundedMessage, DEFAULT_MAX_RECORD_BYTES, type OversizeEdges } from './bounded.js';

/** Options of {@link LineSplitter}. */
export interface LineSplitterOptions {
  /** Longest line handed to onLine (default 256 MiB); longer ones go to onOversizeLine as edges only. */
  maxLineBytes?: number;
  /** A line over the cap: its size and first and last bytes (the line itself was never held whole). */
  onOversizeLine?: (edges: OversizeEdges) => void;
}

/**
 * Collects chunks and hands out complete lines (without the `\n`); the bytes themselves are sent elsewhere.
 * A line within one chunk is handed out as a slice of it (no copy).
 */
export class LineSplitter {
  private partial: BoundedMessage | null = null;
  private readonly maxLineBytes: number;
  private readonly onOversizeLine: (edges: OversizeEdges) => void;

  constructor(
    private readonly onLine: (line: Buffer) => void,
    options: LineSplitterOptions = {},
  ) {
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_RECORD_BYTES;
    this.onOversizeLine = options.onOversizeLine ?? (() => {});
  }

  /** Bytes of the unfinished line held now (at most the cap, or two edges): for tests. */
  get heldBytes(): number {
    return this.partial?.heldBytes ?? 0;
  }

  /** Feed one chunk; calls onLine (or onOversizeLine) for every line it completes. */
  push(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a, start); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.partial === null && piece.length <= this.maxLineBytes) {
        this.onLine(piece);
        continue;
      }
      const line = this.partial ?? new BoundedMessage(this.maxLineBytes);
      this.partial = null;
      line.push(piece);
      this.emit(line);
    }
    if (start < chunk.length) {
      this.partial ??= new BoundedMessage(this.maxLineBytes);
      this.partial.push(chunk.subarray(start));
    }
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    const line = this.partial;
    this.partial = null;
    if (line) this.emit(line);
  }

  private emit(line: BoundedMessage): void {
    const whole = line.whole();
    if (whole) this.onLine(whole);
    else this.onOversizeLine(line.edges());
  }
}

/** True when a line holds only whitespace (nothing to record). */
export function isBlankLine(line: Buffer): boolean {
  for (const byte of line) {
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  }
  return true;
}
