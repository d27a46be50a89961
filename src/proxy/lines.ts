/** Splitting a byte stream into newline-delimited lines without copying more than once per line. */

/** Collects chunks and hands out complete lines (without the `\n`); the bytes themselves are sent elsewhere. */
export class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;

  constructor(private readonly onLine: (line: Buffer) => void) {}

  /** Feed one chunk; calls onLine for every line it completes. */
  push(chunk: Buffer): void {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a, start); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl);
      if (this.parts.length > 0) {
        this.parts.push(piece);
        const line = Buffer.concat(this.parts, this.partBytes + piece.length);
        this.parts = [];
        this.partBytes = 0;
        this.onLine(line);
      } else {
        this.onLine(piece);
      }
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.parts.push(rest);
      this.partBytes += rest.length;
    }
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    if (this.parts.length === 0) return;
    const line = Buffer.concat(this.parts, this.partBytes);
    this.parts = [];
    this.partBytes = 0;
    this.onLine(line);
  }
}

/** True when a line holds only whitespace (nothing to record). */
export function isBlankLine(line: Buffer): boolean {
  for (const byte of line) {
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  }
  return true;
}
