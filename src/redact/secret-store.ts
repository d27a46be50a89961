/**
 * Remembered secrets, kept per source with a fixed budget each, so text from one source can never push out
 * a secret learned from another: a flood of `token=...` in server output forgets only older values seen in
 * server output. All forms of all secrets (see echoes.ts) go into two Aho-Corasick automata, one for the
 * trusted sources (arguments, configuration) and one for server output; values learned since one was
 * built go into small automata of their own, folded into the big one once their second pass has cost
 * about one rebuild (or 32 accumulate), the rebuild done in ~1 ms steps across turns of the event loop,
 * so a scan costs about the same with 1 or 1,000 secrets, and learning one costs little and never stalls.
 */

import { Automaton, AutomatonBuild, replaceSpans, type Span } from './automaton.js';
import { echoForms } from './echoes.js';

/**
 * Where a secret was learned: the agent's arguments, the recorder's configuration, server output, the
 * transport (an MCP session's `Mcp-Session-Id`), or a credential the transport carried (an `Authorization`
 * header a proxy saw). A long proxy run sees thousands of the last two, which must never push a configured
 * secret out, nor each other.
 */
export type SecretSource = 'args' | 'config' | 'output' | 'transport' | 'header';

/** Secrets shorter than this are redacted under their key but not searched for in other strings. */
export const MIN_SCRUBBED_SECRET = 4;
/** Longer values (a blob under a `cookie` key, say) are redacted under their key but not searched for. */
export const MAX_SCRUBBED_SECRET = 4096;

/** Distinct secrets kept per source; the oldest of that source is forgotten first. */
export const SECRET_BUDGET: Readonly<Record<SecretSource, number>> = {
  args: 1000,
  config: 1000,
  output: 256,
  transport: 256,
  header: 512,
};
/** Characters of secret text kept per source (bounds the automaton's size whatever the lengths). */
const CHAR_BUDGET: Readonly<Record<SecretSource, number>> = {
  args: 256 * 1024,
  config: 256 * 1024,
  output: 64 * 1024,
  transport: 64 * 1024,
  header: 256 * 1024,
};

class Pool {
  /** Insertion order = eviction order. */
  readonly values = new Set<string>();
  /** Each value's echo forms, computed once: a rebuild of a big automaton does not recompute 1,000 sets. */
  readonly forms = new Map<string, readonly string[]>();
  chars = 0;
  constructor(
    readonly budget: number,
    readonly charBudget: number,
  ) {}

  /** True when added (false when already known: it becomes the newest, so a value still in use stays). */
  add(v: string): boolean {
    if (this.values.has(v)) {
      this.values.delete(v);
      this.values.add(v);
      return false;
    }
    this.values.add(v);
    this.forms.set(v, echoForms(v));
    this.chars += v.length;
    while (this.values.size > this.budget || this.chars > this.charBudget) {
      const oldest = this.values.values().next().value!;
      this.values.delete(oldest);
      this.forms.delete(oldest);
      this.chars -= oldest.length;
    }
    return true;
  }
}

/** Values learned since a matcher's automaton was built, kept in small automata of at most this many each. */
const RECENT_MAX = 32;
/**
 * A rebuild of the main automaton costs about as much as scanning this many units of text with the small
 * one, per pattern unit of the main one (measured: 94-130 ns per pattern unit to build with 1,000 random
 * secrets, ~5 ns per text unit for the small automaton's pass).
 */
const FOLD_SCAN_PER_PATTERN_UNIT = 20;
/**
 * Work units (automaton.ts: a pattern unit, a node, a dense entry) of one step of a fold's build: ~1 ms
 * (13-17 ns per unit measured with 1,000 random secrets: ~860 Ki units, so ~14 steps), and a store of a
 * few dozen secrets folds within its first step, as before. Counted in work, not time, so it is the same
 * on every machine and under any load.
 */
const FOLD_STEP_WORK = 64 * 1024;
/** Chunks of pending values beyond which a fold still running is finished at once (a flood between turns). */
const MAX_PENDING_CHUNKS = 8;

/** Values learned since the main automaton's build started, at most RECENT_MAX, and their automaton. */
interface PendingChunk {
  forms: string[];
  values: number;
  automaton: Automaton | undefined;
}

/**
 * The secrets of some pools as one automaton, plus small ones for values learned since it was built: a
 * new secret costs a rebuild of one small one (at most RECENT_MAX values). Every scan pays the small ones'
 * passes while they hold values, so they are folded into the big one once that second pass has cost about
 * one rebuild: when the text scanned with values pending (this scan's included) reaches {@link foldAfter}
 * units, or when more than RECENT_MAX accumulate. A fold builds a new main automaton from every pool's
 * values in steps of FOLD_STEP_WORK (the first on the scan that finds the fold due, the rest on later
 * turns of the event loop, or, when no turn comes, one per learned value on the next scan; at once only
 * when no turn came while another rebuild's worth of text was scanned, or when a flood learned at once
 * left more than MAX_PENDING_CHUNKS chunks: one rebuild, as before), so no step stalls the process; until
 * it is swapped in, scans use the old main automaton and every pending chunk, and values learned meanwhile
 * go to new chunks, which stay pending after the swap.
 */
class Matcher {
  private main: Automaton | undefined;
  /** Units of pattern text the main automaton was built from: what a rebuild costs. */
  private mainUnits = 0;
  /** Pending values, oldest first; the first `folding.chunks` of them are in the build under way. */
  private chunks: PendingChunk[] = [];
  private folding: { build: AutomatonBuild; units: number; chunks: number } | undefined;
  /** The next turn's step of the fold (unref'd: a fold never keeps a process alive). */
  private nextStep: NodeJS.Immediate | undefined;
  /** A scheduled step ran since the last learned value (then the next one leaves the fold to the turns). */
  private turnedSinceLearn = false;
  /** A value was learned while folding with no turn since the last: the next scan does a step. */
  private stepOwed = false;
  /** Units of text scanned while values were pending (the small automata's passes) since a fold began or ended. */
  private scannedPending = 0;

  constructor(private readonly pools: readonly Pool[]) {}

  /** A value with these echo forms joined one of the pools. */
  learned(forms: readonly string[]): void {
    if (!this.main) return; // built from the pools, this value included, on the next scan
    let last = this.chunks[this.chunks.length - 1];
    const sealed =
      !last || last.values >= RECENT_MAX || (this.folding && this.folding.chunks === this.chunks.length);
    if (sealed) {
      last = { forms: [], values: 0, automaton: undefined };
      this.chunks.push(last);
    }
    last!.forms.push(...forms);
    last!.values += 1;
    last!.automaton = undefined;
    // Learning only records: the fold's work is done by the next scan (once per learned value, when no
    // turn of the event loop ran a step since) or by the turns, so a flood learned at once costs one rebuild.
    if (this.folding && !this.turnedSinceLearn) this.stepOwed = true;
    this.turnedSinceLearn = false;
  }

  /** Units of text the pending values may cost in second passes before they are folded in. */
  private get foldAfter(): number {
    return this.mainUnits * FOLD_SCAN_PER_PATTERN_UNIT;
  }

  private pendingValues(): number {
    let n = 0;
    for (const c of this.chunks) n += c.values;
    return n;
  }

  /**
   * Values pending in the small automata, and the text left to scan before a fold starts (or, while one
   * is under way, before it is finished at once).
   */
  state(): { values: number; scanLeft: number } {
    const values = this.pendingValues();
    if (values === 0) return { values, scanLeft: 0 };
    return { values, scanLeft: Math.max(0, this.foldAfter - this.scannedPending) };
  }

  /** True while a fold's build is under way. */
  get isFolding(): boolean {
    return this.folding !== undefined;
  }

  /** Every span of `text` some secret covers (sorted, merged). */
  find(text: string): Span[] {
    // A flood of values learned at once: one rebuild now, as a new main automaton would cost anyway.
    while (this.chunks.length > MAX_PENDING_CHUNKS) {
      if (!this.folding) this.startFold(0);
      this.stepFold(Number.POSITIVE_INFINITY);
    }
    if (this.stepOwed) {
      this.stepOwed = false;
      this.stepFold(FOLD_STEP_WORK);
    }
    if (!this.folding && this.pendingValues() > RECENT_MAX) this.startFold(FOLD_STEP_WORK);
    else if (this.chunks.length > 0 && this.scannedPending + text.length >= this.foldAfter) {
      // Enough scanning with values pending to pay for a rebuild: start a fold, or, when one started that
      // long ago and no turn of the event loop has finished it (a synchronous caller), finish it now.
      if (this.folding) this.stepFold(Number.POSITIVE_INFINITY);
      else this.startFold(FOLD_STEP_WORK);
    }
    if (!this.main) {
      const forms = allForms(this.pools);
      this.main = new Automaton(forms);
      this.mainUnits = units(forms);
    }
    let spans = this.main.find(text);
    if (this.chunks.length === 0) return spans;
    this.scannedPending += text.length;
    for (const chunk of this.chunks) {
      chunk.automaton ??= new Automaton(chunk.forms);
      const more = chunk.automaton.find(text);
      if (more.length > 0) spans = spans.length === 0 ? more : mergeSpans(spans, more);
    }
    return spans;
  }

  /** Stop a fold under way (the pending chunks keep every value covered). */
  dispose(): void {
    if (this.nextStep) clearImmediate(this.nextStep);
    this.nextStep = undefined;
    this.folding = undefined;
    this.stepOwed = false;
  }

  /** Build a new main automaton from every pool's values, every pending value included. */
  private startFold(firstStep: number): void {
    const forms = allForms(this.pools);
    this.folding = { build: new AutomatonBuild(forms), units: units(forms), chunks: this.chunks.length };
    this.scannedPending = 0;
    if (firstStep > 0) this.stepFold(firstStep);
  }

  /** One step of the fold; swap the new automaton in when it is complete, else schedule the next step. */
  private stepFold(work: number): void {
    const folding = this.folding;
    if (!folding) return;
    if (!folding.build.advance(work)) {
      if (!this.nextStep) {
        this.nextStep = setImmediate(() => {
          this.nextStep = undefined;
          this.turnedSinceLearn = true;
          try {
            this.stepFold(FOLD_STEP_WORK);
          } catch {
            // Never a throw outside a caller (it would end the agent's process): the pending values stay
            // covered by their small automata, and the next scan's fold throws where a caller handles it.
            this.dispose();
          }
        });
        this.nextStep.unref();
      }
      return;
    }
    if (this.nextStep) clearImmediate(this.nextStep);
    this.nextStep = undefined;
    this.folding = undefined;
    this.main = new Automaton(folding.build);
    this.mainUnits = folding.units;
    this.chunks.splice(0, folding.chunks);
    this.scannedPending = 0;
  }
}

export class SecretStore {
  private readonly pools: Record<SecretSource, Pool> = {
    args: new Pool(SECRET_BUDGET.args, CHAR_BUDGET.args),
    config: new Pool(SECRET_BUDGET.config, CHAR_BUDGET.config),
    output: new Pool(SECRET_BUDGET.output, CHAR_BUDGET.output),
    transport: new Pool(SECRET_BUDGET.transport, CHAR_BUDGET.transport),
    header: new Pool(SECRET_BUDGET.header, CHAR_BUDGET.header),
  };
  private readonly trusted = new Matcher([
    this.pools.args,
    this.pools.config,
    this.pools.transport,
    this.pools.header,
  ]);
  private readonly untrusted = new Matcher([this.pools.output]);
  private frozen = 0;
  /** Values learned while frozen, applied to the matchers on thaw. */
  private deferred: Array<{ value: string; source: SecretSource }> = [];
  /** Bumped on every change (callers re-scrub what they copied before a secret was learned). */
  version = 0;

  /** Remember `value` (trimmed; 4..4096 chars) from `source`; true when it is new to that source. */
  add(value: string, source: SecretSource): boolean {
    const v = value.trim();
    if (v.length < MIN_SCRUBBED_SECRET || v.length > MAX_SCRUBBED_SECRET) return false;
    if (!this.pools[source].add(v)) return false;
    if (this.frozen > 0) this.deferred.push({ value: v, source });
    else this.matcherOf(source).learned(this.pools[source].forms.get(v)!);
    this.version++;
    return true;
  }

  /**
   * Keep scanning with the current automata while a value is walked (a flood of new values in one
   * envelope then costs one rebuild, not one per string); the caller copies again after `thaw`.
   */
  freeze(): void {
    this.frozen++;
  }

  /** Apply what was learned while frozen. */
  thaw(): void {
    if (this.frozen > 0) this.frozen--;
    if (this.frozen > 0) return;
    const learned = this.deferred;
    this.deferred = [];
    for (const { value, source } of learned)
      this.matcherOf(source).learned(this.pools[source].forms.get(value) ?? echoForms(value));
  }

  private matcherOf(source: SecretSource): Matcher {
    return source === 'output' ? this.untrusted : this.trusted;
  }

  /**
   * Per automaton (trusted: arguments, configuration, transport, header; output), how many values wait in the small
   * automaton and how many more units of text may be scanned with them pending before they are folded in.
   */
  pending(): Record<'trusted' | 'output', { values: number; scanLeft: number }> {
    return { trusted: this.trusted.state(), output: this.untrusted.state() };
  }

  /** Per automaton, whether a fold's build is under way (its pending values still scanned on their own). */
  folding(): Record<'trusted' | 'output', boolean> {
    return { trusted: this.trusted.isFolding, output: this.untrusted.isFolding };
  }

  /** Cancel folds under way (their values stay pending and are still found); the store stays usable. */
  dispose(): void {
    this.trusted.dispose();
    this.untrusted.dispose();
  }

  /** How many secrets each source holds. */
  sizes(): Record<SecretSource, number> {
    return {
      args: this.pools.args.values.size,
      config: this.pools.config.values.size,
      output: this.pools.output.values.size,
      transport: this.pools.transport.values.size,
      header: this.pools.header.values.size,
    };
  }

  /** True when some secret is remembered. */
  get empty(): boolean {
    return (
      this.pools.args.values.size === 0 &&
      this.pools.config.values.size === 0 &&
      this.pools.output.values.size === 0 &&
      this.pools.transport.values.size === 0 &&
      this.pools.header.values.size === 0
    );
  }

  /**
   * `text` with every form of every remembered secret replaced by `replacement`. `trustedOnly` applies
   * only secrets from arguments and configuration (fields such as error codes, which server-taught values
   * must not be able to blank out).
   */
  scrub(text: string, replacement: string, trustedOnly = false): string {
    if (text.length < MIN_SCRUBBED_SECRET) return text;
    let spans = this.trusted.find(text);
    if (!trustedOnly && this.pools.output.values.size > 0) {
      const more = this.untrusted.find(text);
      if (more.length > 0) spans = spans.length === 0 ? more : mergeSpans(spans, more);
    }
    return replaceSpans(text, spans, replacement);
  }
}

function allForms(pools: readonly Pool[]): string[] {
  const forms: string[] = [];
  for (const p of pools) for (const f of p.forms.values()) for (const form of f) forms.push(form);
  return forms;
}

/** Units of pattern text in `forms`. */
function units(forms: readonly string[]): number {
  let n = 0;
  for (const f of forms) n += f.length;
  return n;
}

/** Two sorted span lists as one, overlapping spans merged. */
function mergeSpans(a: Span[], b: Span[]): Span[] {
  const all = [...a, ...b].sort((x, y) => x.start - y.start);
  const out: Span[] = [];
  for (const s of all) {
    const last = out[out.length - 1];
    if (last && s.start <= last.end) {
      if (s.end > last.end) last.end = s.end;
    } else out.push({ ...s });
  }
  return out;
}
