/** Shapes shared by the benchmark harness and its figures. */

/** One measured line of a figure: the subject beside its baseline, both from the same run. */
export interface Row {
  name: string;
  /** The budget as written in the design ("<= 1.0x naive logger"), or "none" for a reported-only row. */
  budget: string;
  /** The subject's figure, formatted ("3.1 us per call"). */
  measured: string;
  /** The baseline's figure, formatted. */
  baseline: string;
  /** subject / baseline (or the figure the budget bounds), null when there is no ratio. */
  ratio: number | null;
  /** Whether the budget holds; null for reported-only rows. */
  holds: boolean | null;
  /** Why it holds or not, what was measured, anything surprising. */
  notes: string[];
  /** Raw numbers (medians, per-round values) for results.json. */
  data: Record<string, unknown>;
}

/** One figure's result, as written to results.json. */
export interface FigureResult {
  id: string;
  title: string;
  rows: Row[];
  notes: string[];
  /** Set when the figure could not be measured (the harness broke, or a module was missing). */
  error?: string;
  durationMs: number;
}

/** What a figure gets from the harness. */
export interface FigureContext {
  quick: boolean;
  /** Repository root. */
  root: string;
  /** A fresh scratch dir for this figure (under bench/tmp, removed afterwards). */
  tmp: string;
  log(message: string): void;
  /** `--soak-calls N`: calls through wrap in the soak (each proxy gets 3/10 of them). */
  soakCalls?: number;
}

/** A figure module: `bench/<id>.ts` exports `figure`. */
export interface Figure {
  id: string;
  title: string;
  run(ctx: FigureContext): Promise<Omit<FigureResult, 'id' | 'title' | 'durationMs'>>;
}
