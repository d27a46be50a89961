/** The MCEC 3.0 tool-result envelope and the records the recorder derives from it. */

/** The closed error-category set: the contract's 10 plus the two added with get-text (mcec-wire §3). */
export const ERROR_CATEGORIES = [
  'timeout',
  'ambiguous-selector',
  'stale-element',
  'no-target',
  'invalid-argument',
  'capture-blank',
  'focus',
  'elevation',
  'foreground',
  'internal',
  'ocr-blank',
  'ocr-no-text',
] as const;

export type ErrorCategory = (typeof ERROR_CATEGORIES)[number];

export interface Warning {
  code: string;
  detail: string;
}

export interface ToolError {
  code: string;
  category: ErrorCategory;
  detail: string;
  lastObservation?: Record<string, unknown> | null;
  partialResult?: Record<string, unknown> | null;
}

interface EnvelopeBase {
  sessionId?: string | null;
  warnings?: Warning[];
}

export interface SuccessEnvelope extends EnvelopeBase {
  ok: true;
  result?: Record<string, unknown> | null;
  error?: never;
}

export interface FailureEnvelope extends EnvelopeBase {
  ok: false;
  result?: null;
  error: ToolError;
}

/** One tool outcome: a success or a failure, never both. */
export type Envelope = SuccessEnvelope | FailureEnvelope;

/** A window as MCEC describes it (mcec-wire §2). */
export interface WindowInfo {
  handle: number;
  title: string;
  className: string;
  processName: string;
  processId: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The server's blank-frame verdict: one 5-bit-quantized colour holds >= 0.99 of the samples. */
export interface BlankCheck {
  blank: boolean;
  dominantFraction: number;
  dominantIsDark: boolean;
}

/**
 * One region painted over in a stored image (src/mask): image pixels, why, which rule, what it covers, and why
 * it covers more than that when it was widened (fail-closed).
 */
export interface MaskedRegion {
  rect: { x: number; y: number; width: number; height: number };
  reason: string;
  rule: string;
  target?: string;
  widened?: string;
}

/** What stands in a log or an error in place of a capture's image bytes. */
export interface CaptureSummary {
  kind: 'capture-summary';
  window?: WindowInfo | Record<string, unknown> | null;
  handle?: number | null;
  width: number;
  height: number;
  encoding: string;
  bytes: number;
  blankCheck?: BlankCheck | null;
  file?: string | null;
  /** Path of the image file: relative to the session dir in the log, absolute in what the agent gets. */
  artifact?: string;
  /** Why the image could not be kept (bad base64, not an image, over the artifact budget, disk error). */
  artifactError?: string;
  /** sha256 of the image bytes, when they were decoded. */
  sha256?: string;
  /**
   * The bytes are in no format the recorder reads pixels of (an SVG, an icon; `encoding` is their declared MIME
   * type): kept as they came, so width and height are 0 and blankCheck null, unknown rather than measured.
   */
  notRaster?: true;
  /**
   * In place of a data: URI: what stood between its `data:` and its comma (`image/png;base64`), so a replay
   * gives back the URI as it came. Never the bytes.
   */
  dataUri?: string;
  /** The regions masked in the stored image (or, with maskedOnExport, to be masked when it leaves). */
  masked?: MaskedRegion[];
  /** The session keeps the original: `masked` is painted in bundles and exports only. */
  maskedOnExport?: true;
}

/** One breach of the contract, located by a JSON pointer into the value checked. */
export interface Violation {
  path: string;
  message: string;
}

export interface ValidationResult {
  valid: boolean;
  violations: Violation[];
}

/** Where a JSON value carries inline image bytes. */
export interface ImageBytesLocation {
  /** JSON pointer to the string holding the bytes; segments inside a nested JSON string are joined after a `#json` marker segment. */
  path: string;
  /** How the bytes are carried. */
  form: 'base64-field' | 'image-block' | 'data-uri' | 'sniffed';
  /** Decoded length in bytes (an estimate from the base64 length for very large strings). */
  decodedBytes: number;
  /** Image format from the magic bytes, when recognised. */
  format?: 'png' | 'jpeg' | 'gif' | 'bmp' | 'webp';
  /** MIME type declared next to the bytes (image block `mimeType`, data: URI), when any. */
  mimeType?: string;
}

export type ToolOutputKind =
  | 'envelope'
  | 'call-tool-result'
  | 'legacy-command-result'
  | 'json-rpc-result'
  | 'json-rpc-error'
  | 'invalid';

/** An image block of an MCP CallToolResult, by position. */
export interface ImageBlockRef {
  index: number;
  data: string;
  mimeType: string;
}

/** A JSON-RPC protocol fault (not a tool outcome). */
export interface ProtocolFault {
  code: number;
  message: string;
  data?: unknown;
  id: string | number | null;
}

/** Everything a dispatch can return, normalized for the rest of the pipeline. */
export interface ToolOutput {
  kind: ToolOutputKind;
  /** The envelope read (or synthesized for an unreadable output, so nothing downstream breaks). */
  envelope?: Envelope;
  /**
   * JSON pointer to where the envelope was read from in the value given (`''` for a bare envelope,
   * `/content/1/text/#json` for a CallToolResult). Absent when the envelope was mapped or synthesized.
   */
  envelopePath?: string;
  /** The MCP `isError` flag, when the output was a CallToolResult. */
  isError?: boolean;
  /** Image blocks of a CallToolResult. */
  images: ImageBlockRef[];
  violations: Violation[];
  /** True when the envelope was mapped from a legacy CommandResult. */
  legacy?: boolean;
  /**
   * True for a plain MCP tool result of a server that is not MCEC (no envelope in it): the envelope stands
   * for its outcome only (`ok` is `!isError`), the result itself is the response.
   */
  plain?: boolean;
  /** True when the envelope was synthesized because none could be read. */
  synthesized?: boolean;
  /** Set for `json-rpc-error`. */
  fault?: ProtocolFault;
}
