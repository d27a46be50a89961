/**
 * Remembered secrets, kept per source with a fixed budget each, so text from one source can never push out
 * a secret learned from another: a flood of `token=...` in server output forgets only older values seen in
 * server output. All forms of all secrets (see echoes.ts) go into two Aho-Corasick automata, one for the
 * trusted sources (arguments, configuration) and one for server output; values learned since one was
 * built go into a small automaton of their own, folded into the big one once their second pass has cost
 * about one rebuild (or 32 accumulate), so a scan costs about the same with 1 or 1,000 secrets, and
 * learning one costs little.
 */

import { Automaton, replaceSpans, type Span } from './automaton.js';
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

/** Values learned since a matcher's automaton was built, kept in a small automaton of their own. */
const RECENT_MAX = 32;
/**
 * A rebuild of the main automaton costs about as much as scanning this many units of text with the small
 * one, per pattern unit of the main one (measured: 94-130 ns per pattern unit to build with 1,000 random
 * secrets, ~5 ns per text unit for the small automaton's pass).
 */
const FOLD_SCAN_PER_PATTERN_UNIT = 20;

/**
 * The secrets of some pools as one automaton, plus a small one for values learned since it was built: a
 * new secret costs a rebuild of the small one (at most RECENT_MAX values). Every scan pays the small one's
 * pass while it holds values, so they are folded into the big one (a full rebuild) once that second pass
 * has cost about one rebuild: when the text scanned with values pending (this scan's included) reaches
 * {@link foldAfter} units, or when RECENT_MAX accumulate. Learning costs little and scanning stays one pass
 * within a constant factor of the cheapest schedule, whatever the secrets look like or how they arrive.
 */
class Matcher {
  private main: Automaton | undefined;
  /** Units of pattern text the main automaton was built from: what a rebuild costs. */
  private mainUnits = 0;
  private recent: Automaton | undefined;
  private recentForms: string[] = [];
  private recentValues = 0;
  /** Units of text scanned while values were pending (the small automaton's passes) since the last fold. */
  private scannedPending = 0;

  constructor(private readonly pools: readonly Pool[]) {}

  /** A value with these echo forms joined one of the pools. */
  learned(forms: readonly string[]): void {
    if (!this.main || this.recentValues >= RECENT_MAX) {
      this.reset();
      return;
    }
    this.recentForms.push(...forms);
    this.recentValues += 1;
    this.recent = undefined;
  }

  /** Units of text the pending values may cost in second passes before they are folded in. */
  private get foldAfter(): number {
    return this.mainUnits * FOLD_SCAN_PER_PATTERN_UNIT;
  }

  /** Values pending in the small automaton, and the text left to scan before they are folded in. */
  state(): { values: number; scanLeft: number } {
    if (this.recentValues === 0) return { values: 0, scanLeft: 0 };
    return { values: this.recentValues, scanLeft: Math.max(0, this.foldAfter - this.scannedPending) };
  }

  /** Every span of `text` some secret covers (sorted, merged). */
  find(text: string): Span[] {
    if (this.recentValues > 0 && this.scannedPending + text.length >= this.foldAfter) this.reset();
    if (!this.main) {
      const forms = allForms(this.pools);
      this.main = new Automaton(forms);
      this.mainUnits = 0;
      for (const f of forms) this.mainUnits += f.length;
    }
    const spans = this.main.find(text);
    if (this.recentValues === 0) return spans;
    this.scannedPending += text.length;
    this.recent ??= new Automaton(this.recentForms);
    const more = this.recent.find(text);
    return more.length === 0 ? spans : mergeSpans(spans, more);
  }

  private reset(): void {
    this.main = undefined;
    this.recent = undefined;
    this.recentForms = [];
    this.recentValues = 0;
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
