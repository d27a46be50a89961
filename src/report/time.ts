/** Times and durations for reports: UTC ISO stamps and short durations ("850 ms", "2.3 s", "1 min 4 s"). */

/** The date-fns functions the reports use. */
interface DateFns {
  parseISO: typeof import('date-fns/parseISO').parseISO;
  isValid: typeof import('date-fns/isValid').isValid;
  differenceInMilliseconds: typeof import('date-fns/differenceInMilliseconds').differenceInMilliseconds;
}

let dateFns: Promise<DateFns> | null = null;

/**
 * date-fns, imported on first use and per function: the package index loads every one of its ~250
 * modules (150-450 ms here), these entry points load a handful.
 */
function loadDateFns(): Promise<DateFns> {
  dateFns ??= Promise.all([
    import('date-fns/parseISO'),
    import('date-fns/isValid'),
    import('date-fns/differenceInMilliseconds'),
  ]).then(([a, b, c]) => ({
    parseISO: a.parseISO,
    isValid: b.isValid,
    differenceInMilliseconds: c.differenceInMilliseconds,
  }));
  return dateFns;
}

/** Formatting functions bound to a loaded date-fns. */
export interface TimeFormat {
  /** ISO 8601 UTC with milliseconds (`2026-12-02T10:15:02.123Z`), or the input clipped when it is not a time. */
  iso(value: string | null | undefined): string | null;
  /** Milliseconds from `from` to `to`, or null when either is missing or invalid. */
  between(from: string | null | undefined, to: string | null | undefined): number | null;
  /** A duration as "850 ms", "2.3 s", "1 min 4 s", "2 h 5 min"; "" for null. */
  duration(ms: number | null | undefined): string;
}

/** Load date-fns and return the report's time formatters (UTC whatever TZ says). */
export async function loadTimeFormat(): Promise<TimeFormat> {
  const { parseISO, isValid, differenceInMilliseconds } = await loadDateFns();
  const parse = (value: string | null | undefined): Date | null => {
    if (!value) return null;
    const date = parseISO(value);
    return isValid(date) ? date : null;
  };
  return {
    iso(value) {
      if (value == null) return null;
      const date = parse(value);
      // toISOString is UTC by definition; date-fns' format() would use the local zone.
      return date ? date.toISOString() : value.slice(0, 40);
    },
    between(from, to) {
      const a = parse(from);
      const b = parse(to);
      return a && b ? differenceInMilliseconds(b, a) : null;
    },
    duration(ms) {
      // Plain arithmetic, not date-fns' intervalToDuration: that one counts calendar units in local time,
      // so a span across a DST change gains or loses an hour.
      return formatDurationMs(ms);
    },
  };
}

/** Duration rules: under 1 s in ms, under 1 min in seconds with one decimal, then whole units. */
export function formatDurationMs(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return '';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  if (abs < 1) return abs === 0 ? '0 ms' : `${sign}<1 ms`;
  if (abs < 999.5) return `${sign}${Math.round(abs)} ms`;
  const tenths = Math.round(abs / 100) / 10;
  if (tenths < 60) return `${sign}${Number.isInteger(tenths) ? tenths : tenths.toFixed(1)} s`;
  const totalSeconds = Math.round(abs / 1000);
  const days = Math.floor(totalSeconds / 86400);
  const hours = Math.floor((totalSeconds % 86400) / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  if (days > 0) return `${sign}${days} d ${hours} h`;
  if (hours > 0) return `${sign}${hours} h ${minutes} min`;
  return `${sign}${minutes} min ${seconds} s`;
}
