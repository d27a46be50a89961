/** Fast ISO 8601 UTC timestamps: rows are stamped twice per call, and toISOString is costly at that rate. */

/** Largest epoch ms whose year still has four digits (toISOString's plain form). */
const MAX_PLAIN_MS = 253_402_300_799_999;
let cachedSecond = Number.NaN;
let cachedPrefix = '';

/** `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC, like Date#toISOString, cached per second. */
export function isoTime(date: Date): string {
  const ms = date.getTime();
  if (!(ms >= 0 && ms <= MAX_PLAIN_MS)) return date.toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 19);
  }
  const milli = ms - second * 1000;
  return `${cachedPrefix}.${milli < 10 ? '00' : milli < 100 ? '0' : ''}${milli}Z`;
}

/** How far a server's clock may be from ours before its times are not used to name or order anything. */
export const MAX_SERVER_CLOCK_SKEW_MS = 24 * 60 * 60 * 1000;

/**
 * A time the server reported (an ISO string), when it is within MAX_SERVER_CLOCK_SKEW_MS of `local` (our clock
 * at the same moment); else `local`. A year 1970 or +275760 would name a session dir nothing can find and show
 * decades of duration; the server's raw value stays in the stored envelope.
 */
export function saneServerTime(raw: unknown, local: Date): Date {
  if (typeof raw !== 'string') return local;
  const t = new Date(raw).getTime();
  return Math.abs(t - local.getTime()) <= MAX_SERVER_CLOCK_SKEW_MS ? new Date(t) : local;
}
