/** Sizes and durations as the CLIs read them and every program prints them (a leaf: no project imports). */

const BYTE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** Parse `123`, `500KB`, `10MB`, `1.5 GiB` into bytes (binary units); null when it is not a positive size. */
export function parseByteSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]{0,3})\s*$/.exec(String(text));
  if (!m) return null;
  const unit = BYTE_UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return null;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : null;
}

/** Parse `7d`, `12h`, `30m`, `45s`, `2w`, `500ms` into milliseconds; null when it is not a positive duration. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|[smhdw])\s*$/i.exec(String(text));
  if (!m) return null;
  const ms = Math.round(Number(m[1]) * DURATION_UNITS[m[2]!.toLowerCase()]!);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : null;
}

/**
 * A whole number as "1,234,567", grouped by hand: `toLocaleString` would page in Node's ICU data (~8 MB of a
 * bundle's peak RSS, BENCHMARKS.md) and make the text depend on the ICU Node was built with.
 */
export function groupThousands(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * Bytes as "512 B", "14 KB", "1.2 MB", "256 MB" (binary units, as parseByteSize reads them: what `256MiB`
 * parses to prints as `256 MB`): KB whole, MB and GB with one decimal unless it is `.0`; "? B" when unknown.
 */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes == null || !Number.isFinite(bytes) || bytes < 0) return '? B';
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  if (bytes < 1024 ** 2) return `${Math.round(bytes / 1024)} KB`;
  const [value, unit] = bytes < 1024 ** 3 ? [bytes / 1024 ** 2, 'MB'] : [bytes / 1024 ** 3, 'GB'];
  return `${value.toFixed(1).replace(/\.0$/, '')} ${unit}`;
}
