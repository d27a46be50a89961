/** The one lazy Handlebars loader: each renderer gets its own instances, created on first use. */

export type HandlebarsApi = typeof import('handlebars');

/** A renderer's own Handlebars instances: the runtime (precompiled specs, lighter) and the full compiler. */
export interface LazyHandlebars {
  /** handlebars/runtime: enough for precompiled templates, and lighter to load. */
  runtime(): Promise<HandlebarsApi>;
  /** The full Handlebars, with its compiler (for templates given at run time). */
  compiler(): Promise<HandlebarsApi>;
}

/** Instances of Handlebars loaded on first use, each a fresh `create()` that `setup` configures once. */
export function lazyHandlebars(setup: (hb: HandlebarsApi) => void = () => {}): LazyHandlebars {
  let runtime: Promise<HandlebarsApi> | null = null;
  let compiler: Promise<HandlebarsApi> | null = null;
  const ownInstance = (mod: unknown): HandlebarsApi => {
    const hb = (((mod as { default?: HandlebarsApi }).default ?? mod) as HandlebarsApi).create();
    setup(hb);
    return hb;
  };
  return {
    runtime() {
      runtime ??= import('handlebars/runtime.js').then(ownInstance);
      return runtime;
    },
    compiler() {
      compiler ??= import('handlebars').then(ownInstance);
      return compiler;
    },
  };
}
