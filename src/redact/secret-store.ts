/**
 * Remembered secrets, kept per source with a fixed budget each, so text from one source can never push out
 * a secret learned from another: a flood of `token=...` in server output forgets only older values seen in
 * server output. All forms of all secrets (see echoes.ts) go into two Aho-Corasick automata, one for the
 * trusted sources (arguments, configuration) and one for server output, rebuilt lazily after a change, so
 * a scan costs the same with 1 or 1,000 secrets.
 */

import { Automaton, replaceSpans, type Span } from './automaton.js';
import { echoForms } from './echoes.js';

/** Where a secret was learned: the agent's arguments, the recorder's configuration, or server output. */
export type SecretSource = 'args' | 'config' | 'output';

/** Secrets shorter than this are redacted under their key but not searched for in other strings. */
export const MIN_SCRUBBED_SECRET = 4;
/** Longer values (a blob under a `cookie` key, say) are redacted under their key but not searched for. */
export const MAX_SCRUBBED_SECRET = 4096;

/** Distinct secrets kept per source; the oldest of that source is forgotten first. */
export const SECRET_BUDGET: Readonly<Record<SecretSource, number>> = {
  args: 1000,
  config: 1000,
  output: 256,
};
/** Server-output values searched with indexOf before their automaton is rebuilt. */
const PENDING_MAX = 32;
/** Characters of secret text kept per source (bounds the automaton's size whatever the lengths). */
const CHAR_BUDGET: Readonly<Record<SecretSource, number>> = {
  args: 256 * 1024,
  config: 256 * 1024,
  output: 64 * 1024,
};

class Pool {
  /** Insertion order = eviction order. */
  readonly values = new Set<string>();
  chars = 0;
  constructor(
    readonly budget: number,
    readonly charBudget: number,
  ) {}

  /** True when added (false when already known). */
  add(v: string): boolean {
    if (this.values.has(v)) return false;
    this.values.add(v);
    this.chars += v.length;
    while (this.values.size > this.budget || this.chars > this.charBudget) {
      const oldest = this.values.values().next().value!;
      this.values.delete(oldest);
      this.chars -= oldest.length;
    }
    return true;
  }
}

export class SecretStore {
  private readonly pools: Record<SecretSource, Pool> = {
    args: new Pool(SECRET_BUDGET.args, CHAR_BUDGET.args),
    config: new Pool(SECRET_BUDGET.config, CHAR_BUDGET.config),
    output: new Pool(SECRET_BUDGET.output, CHAR_BUDGET.output),
  };
  private trusted: Automaton | undefined;
  private untrusted: Automaton | undefined;
  private trustedStale = false;
  private untrustedStale = false;
  private frozen = 0;
  /** Forms of server-output values learned since the untrusted automaton was built (matched exactly). */
  private pending: string[] = [];
  private pendingValues = 0;
  /** Bumped on every change (callers re-scrub what they copied before a secret was learned). */
  version = 0;

  /** Remember `value` (trimmed; 4..4096 chars) from `source`; true when it is new to that source. */
  add(value: string, source: SecretSource): boolean {
    const v = value.trim();
    if (v.length < MIN_SCRUBBED_SECRET || v.length > MAX_SCRUBBED_SECRET) return false;
    // A value already trusted needs no untrusted copy (which could be evicted, but the trusted one stays).
    if (source === 'output' && (this.pools.args.values.has(v) || this.pools.config.values.has(v)))
      return false;
    if (!this.pools[source].add(v)) return false;
    if (source !== 'output') this.trustedStale = true;
    else if (this.untrusted && this.pendingValues < PENDING_MAX) {
      // Searched with indexOf until PENDING_MAX accumulate: a new value per call does not rebuild per call.
      this.pending.push(...echoForms(v));
      if (++this.pendingValues >= PENDING_MAX) this.untrustedStale = true;
    } else this.untrustedStale = true;
    if (this.frozen === 0) this.thaw();
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

  /** Apply what was learned while frozen: the changed automata are rebuilt on next use. */
  thaw(): void {
    if (this.frozen > 0) this.frozen--;
    if (this.frozen > 0) return;
    if (this.trustedStale) this.trusted = undefined;
    if (this.untrustedStale) this.dropUntrusted();
    this.trustedStale = false;
    this.untrustedStale = false;
  }

  /** How many secrets each source holds. */
  sizes(): Record<SecretSource, number> {
    return {
      args: this.pools.args.values.size,
      config: this.pools.config.values.size,
      output: this.pools.output.values.size,
    };
  }

  /** True when some secret is remembered. */
  get empty(): boolean {
    return (
      this.pools.args.values.size === 0 &&
      this.pools.config.values.size === 0 &&
      this.pools.output.values.size === 0
    );
  }

  /**
   * `text` with every form of every remembered secret replaced by `replacement`. `trustedOnly` applies
   * only secrets from arguments and configuration (fields such as error codes, which server-taught values
   * must not be able to blank out).
   */
  scrub(text: string, replacement: string, trustedOnly = false): string {
    if (text.length < MIN_SCRUBBED_SECRET) return text;
    let spans = this.trustedAutomaton().find(text);
    if (!trustedOnly && this.pools.output.values.size > 0) {
      const more = this.untrustedAutomaton().find(text);
      for (const form of this.pending) {
        for (let at = text.indexOf(form); at !== -1; at = text.indexOf(form, at + 1))
          more.push({ start: at, end: at + form.length });
      }
      if (more.length > 0) spans = spans.length === 0 ? mergeSpans([], more) : mergeSpans(spans, more);
    }
    return replaceSpans(text, spans, replacement);
  }

  private dropUntrusted(): void {
    this.untrusted = undefined;
    this.pending = [];
    this.pendingValues = 0;
  }

  private trustedAutomaton(): Automaton {
    if (!this.trusted) this.trusted = build([this.pools.args, this.pools.config]);
    return this.trusted;
  }

  private untrustedAutomaton(): Automaton {
    if (!this.untrusted) {
      this.dropUntrusted();
      this.untrusted = build([this.pools.output]);
    }
    return this.untrusted;
  }
}

function build(pools: Pool[]): Automaton {
  const forms: string[] = [];
  for (const p of pools) for (const v of p.values) forms.push(...echoForms(v));
  return new Automaton(forms);
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
