/**
 * The recorder's port for what becomes of a session once it is closed: at the end of `close()` the recorder
 * hands the dirs of the sessions whose logs it closed cleanly to the handler it was created with, and knows
 * nothing more. Who gives which handler (a worker's recorder names it by module, as a function cannot cross
 * threads): src/record/README.md "Closed sessions".
 */
import { thrownMessage } from './outcome.js';

/** What to do with the dirs of the sessions a recorder closed cleanly (their logs closed, nothing left to write). */
export type ClosedSessionsHandler = (dirs: string[]) => Promise<void>;

/** A ClosedSessionsHandler a worker thread can load: the module's URL and the name of its export. */
export interface ClosedSessionsModule {
  url: string;
  name: string;
}

/**
 * Hand the closed sessions' dirs on, when there are any and a handler was given. Never fails the close: what
 * the handler did not do is for a later reader (its creator's docs say what that means), and one `notice`
 * line says what failed, so a misconfigured handler (a wrong module URL, a missing dist file, a misspelled
 * export) is not silent.
 */
export async function handClosedSessions(
  handler: ClosedSessionsHandler | undefined,
  dirs: string[],
  notice: (line: string) => void,
): Promise<void> {
  if (!handler || dirs.length === 0) return;
  try {
    await handler(dirs);
  } catch (err) {
    const sessions = dirs.length === 1 ? '1 closed session' : `${dirs.length} closed sessions`;
    notice(
      `mcec-recorder: the closed-sessions handler failed for ${sessions} (${thrownMessage(err).slice(0, 300)})`,
    );
  }
}

/** The handler a ClosedSessionsModule names, its module loaded only when there is something to hand on. */
export function handlerInModule(module: ClosedSessionsModule): ClosedSessionsHandler {
  return async (dirs) => {
    let loaded: Record<string, unknown>;
    try {
      loaded = (await import(module.url)) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`could not load ${module.url}: ${thrownMessage(err)}`);
    }
    const handler = loaded[module.name];
    if (typeof handler !== 'function') throw new TypeError(`${module.url} exports no ${module.name}`);
    await (handler as ClosedSessionsHandler)(dirs);
  };
}
