/** Parsing and formatting of the sizes and durations that the bundle CLI accepts. */

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

/** `1536` -> `1.5 KB` (binary units, one decimal). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let i = 0;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i += 1;
  }
  return `${value.toFixed(1)} ${units[i]}`;
}
