/**
 * The recorder's port for what becomes of a session once it is closed: at the end of `close()` the recorder
 * hands the dirs of the sessions whose logs it closed cleanly to the handler it was created with, and knows
 * nothing more. The composition roots give fleet's catalog sidecars (`src/fleet/catalog-sidecars.ts`): the
 * package's `createRecorder` (src/index.ts), the demo and `mcec-record`, whose recorder runs in a worker
 * thread and so names the handler by module instead (a function cannot cross threads).
 */

/** What to do with the dirs of the sessions a recorder closed cleanly (their logs closed, nothing left to write). */
export type ClosedSessionsHandler = (dirs: string[]) => Promise<void>;

/** A ClosedSessionsHandler a worker thread can load: the module's URL and the name of its export. */
export interface ClosedSessionsModule {
  url: string;
  name: string;
}

/**
 * Hand the closed sessions' dirs on, when there are any and a handler was given. Never fails the close: what
 * the handler did not do is for a later reader (a missing sidecar means the log is read).
 */
export async function handClosedSessions(
  handler: ClosedSessionsHandler | undefined,
  dirs: string[],
): Promise<void> {
  if (!handler || dirs.length === 0) return;
  try {
    await handler(dirs);
  } catch {
    // the next reader of these sessions does what the handler did not
  }
}

/** The handler a ClosedSessionsModule names, its module loaded only when there is something to hand on. */
export function handlerInModule(module: ClosedSessionsModule): ClosedSessionsHandler {
  return async (dirs) => {
    const loaded = (await import(module.url)) as Record<string, unknown>;
    const handler = loaded[module.name];
    if (typeof handler !== 'function') throw new TypeError(`${module.url} exports no ${module.name}`);
    await (handler as ClosedSessionsHandler)(dirs);
  };
}
