/** Times and durations for reports: UTC ISO stamps and short durations ("850 ms", "2.3 s", "1 min 4 s"). */

/** The four date-fns functions the reports use. */
interface DateFns {
  parseISO: typeof import('date-fns/parseISO').parseISO;
  isValid: typeof import('date-fns/isValid').isValid;
  differenceInMilliseconds: typeof import('date-fns/differenceInMilliseconds').differenceInMilliseconds;
  intervalToDuration: typeof import('date-fns/intervalToDuration').intervalToDuration;
}

let dateFns: Promise<DateFns> | null = null;

/**
 * date-fns, imported on first use and per function: the package index loads every one of its ~250
 * modules (150-450 ms here), these four entry points load a handful.
 */
function loadDateFns(): Promise<DateFns> {
  dateFns ??= Promise.all([
    import('date-fns/parseISO'),
    import('date-fns/isValid'),
    import('date-fns/differenceInMilliseconds'),
    import('date-fns/intervalToDuration'),
  ]).then(([a, b, c, d]) => ({
    parseISO: a.parseISO,
    isValid: b.isValid,
    differenceInMilliseconds: c.differenceInMilliseconds,
    intervalToDuration: d.intervalToDuration,
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
  const { parseISO, isValid, differenceInMilliseconds, intervalToDuration } = await loadDateFns();
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
      return formatDurationMs(ms, (total) => intervalToDuration({ start: 0, end: total }));
    },
  };
}

type Split = (ms: number) => { days?: number; hours?: number; minutes?: number; seconds?: number };

/** Duration rules: under 1 s in ms, under 1 min in seconds with one decimal, then whole units. */
export function formatDurationMs(ms: number | null | undefined, split?: Split): string {
  if (ms == null || !Number.isFinite(ms)) return '';
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  if (abs < 1) return abs === 0 ? '0 ms' : `${sign}<1 ms`;
  if (abs < 999.5) return `${sign}${Math.round(abs)} ms`;
  const tenths = Math.round(abs / 100) / 10;
  if (tenths < 60) return `${sign}${Number.isInteger(tenths) ? tenths : tenths.toFixed(1)} s`;
  const totalSeconds = Math.round(abs / 1000);
  const parts = split
    ? split(totalSeconds * 1000)
    : {
        days: Math.floor(totalSeconds / 86400),
        hours: Math.floor((totalSeconds % 86400) / 3600),
        minutes: Math.floor((totalSeconds % 3600) / 60),
        seconds: totalSeconds % 60,
      };
  // intervalToDuration folds long spans into months/years; days beyond that are rare enough to compute here.
  const days = totalSeconds >= 86400 ? Math.floor(totalSeconds / 86400) : (parts.days ?? 0);
  const hours = parts.hours ?? 0;
  const minutes = parts.minutes ?? 0;
  const seconds = parts.seconds ?? 0;
  if (days > 0) return `${sign}${days} d ${hours} h`;
  if (hours > 0) return `${sign}${hours} h ${minutes} min`;
  return `${sign}${minutes} min ${seconds} s`;
}
