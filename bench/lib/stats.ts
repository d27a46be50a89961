/** Small statistics and timing helpers: medians over rounds, percentiles, formatting, memory sampling. */

/** The median of a list (mean of the middle two for an even length); NaN for an empty one. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** The p-th percentile (0..100, nearest rank) of a list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[rank]!;
}

/** Arithmetic mean. */
export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Milliseconds since an arbitrary origin, as a float with sub-microsecond resolution. */
export function nowMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** A duration in ms, formatted with a unit that keeps 2-3 significant digits. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const abs = Math.abs(ms);
  if (abs < 0.001) return `${(ms * 1e6).toFixed(0)} ns`;
  if (abs < 1) return `${(ms * 1000).toFixed(abs < 0.01 ? 2 : 1)} us`;
  if (abs < 1000) return `${ms.toFixed(abs < 10 ? 2 : 1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

/** Bytes as MB (10^6) with one decimal. */
export function fmtMB(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** A ratio with two decimals and an x. */
export function fmtRatio(r: number | null): string {
  return r === null || !Number.isFinite(r) ? 'n/a' : `${r.toFixed(2)}x`;
}

/** Round a number for results.json (keeps it readable). */
export function round(v: number, digits = 4): number {
  if (!Number.isFinite(v)) return v;
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

/**
 * Run `rounds` rounds of the named arms, alternating their order from round to round (forward, then
 * reversed), so drift in the machine's state (page cache, CPU frequency, GC debt) hits every arm alike.
 * Returns each arm's per-round values.
 */
export async function alternate<K extends string>(
  rounds: number,
  arms: Record<K, (round: number) => Promise<number>>,
): Promise<Record<K, number[]>> {
  const names = Object.keys(arms) as K[];
  const out = Object.fromEntries(names.map((n) => [n, [] as number[]])) as unknown as Record<K, number[]>;
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? names : [...names].reverse();
    for (const name of order) out[name].push(await arms[name](r));
  }
  return out;
}

/** Samples process.memoryUsage() on a timer and on demand; keeps the peaks. */
export class MemorySampler {
  peakRss = 0;
  peakHeapUsed = 0;
  peakExternal = 0;
  samples = 0;
  private timer: NodeJS.Timeout | undefined;

  /** Start sampling every `intervalMs`. */
  start(intervalMs = 10): this {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
    return this;
  }

  /** Take one sample now. */
  sample(): void {
    const m = process.memoryUsage();
    this.samples += 1;
    if (m.rss > this.peakRss) this.peakRss = m.rss;
    if (m.heapUsed > this.peakHeapUsed) this.peakHeapUsed = m.heapUsed;
    if (m.external + m.arrayBuffers > this.peakExternal) this.peakExternal = m.external + m.arrayBuffers;
  }

  /** Stop the timer (after a last sample). */
  stop(): this {
    this.sample();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    return this;
  }
}

/** Run a full GC when the process was started with --expose-gc. */
export function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) g();
}

/**
 * A full collection, then a wait until the process is idle: the collector's helper threads go on sweeping after
 * `gc()` returns (3 ms of CPU in the next 30 ms after a 4K round here), and on 2 cores that work would land on
 * the core a parallel arm uses and a sequential one leaves idle. Polls the process's CPU time every 5 ms until
 * an interval adds less than 0.2 ms (at most 100 ms).
 */
export async function gcSettled(): Promise<void> {
  gc();
  let last = process.cpuUsage();
  for (let waited = 0; waited < 100; waited += 5) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    const now = process.cpuUsage();
    const busyMs = (now.user + now.system - last.user - last.system) / 1000;
    last = now;
    if (busyMs < 0.2) return;
  }
}

/** One turn of the event loop (lets timers, I/O callbacks and setImmediate work run). */
export function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
