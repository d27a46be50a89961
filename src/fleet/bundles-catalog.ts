/**
 * A catalog of a folder of bug bundles collected from many machines (`mcec-bundle triage --bundles DIR`):
 * each zip's `session.sqlite` snapshot is read like a session dir, into a catalog in memory. Reads only
 * the one entry, within a size cap; a zip without a log (built with --no-db) or that cannot be read is
 * skipped and said so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Entry } from 'yauzl';
import { isPortableDirName, LOG_FILE } from '../paths/naming.js';
import { Catalog, type CatalogEntry } from '../store/catalog.js';
import { foreignLogProblem } from '../store/foreign-log.js';
import { makeTempDir, removeBestEffort } from '../util/temp-files.js';
import { readCatalogEntry } from './catalog-entry.js';

/** Largest session.sqlite read out of a bundle. */
const MAX_LOG_BYTES = 2 * 1024 ** 3;

/** A catalog (in memory) of the bundles in `dir`, and the zips that were skipped with why. */
export async function catalogOfBundles(
  dir: string,
  options: { onProgress?: (done: number, total: number) => void } = {},
): Promise<{ catalog: Catalog; bundles: number; skipped: Array<{ zip: string; why: string }> }> {
  const zips = fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.toLowerCase().endsWith('.zip'))
    .map((e) => path.join(dir, e.name))
    .sort();
  const catalog = Catalog.memory();
  const skipped: Array<{ zip: string; why: string }> = [];
  const scratch = makeTempDir('mcec-bundles');
  // The session a bundle holds: its log's id and start, whatever its folder or zip was named (a copy's zip
  // `... (2).zip` of the same session counts once); a folder name taken already gets the zip's name.
  const seen = new Map<string, string>();
  const names = new Set<string>();
  let bundles = 0;
  try {
    for (const [i, zip] of zips.entries()) {
      if (i > 0) options.onProgress?.(i, zips.length);
      try {
        const entry = await entryOfBundle(zip, scratch);
        const identity = `${entry.session.session_id}\n${entry.session.started_at}`;
        const earlier = seen.get(identity);
        if (earlier !== undefined) {
          skipped.push({
            zip,
            why: `the same session (${entry.session.session_id}) as an earlier bundle (${earlier})`,
          });
          continue;
        }
        seen.set(identity, path.basename(zip));
        const named = names.has(entry.session.dir_name) ? renamed(entry, path.basename(zip)) : entry;
        names.add(named.session.dir_name);
        catalog.put([{ entry: named, touched: 0, dirMtime: null }]);
        bundles += 1;
      } catch (err) {
        skipped.push({ zip, why: (err as Error).message });
      }
    }
  } catch (err) {
    catalog.close();
    throw err;
  } finally {
    removeBestEffort(scratch);
  }
  options.onProgress?.(zips.length, zips.length);
  return { catalog, bundles, skipped };
}

/** The entry under another dir name (its rows are keyed by it). */
function renamed(entry: CatalogEntry, dirName: string): CatalogEntry {
  return {
    session: { ...entry.session, dir_name: dirName },
    failures: entry.failures.map((f) => ({ ...f, dir_name: dirName })),
    tools: entry.tools.map((t) => ({ ...t, dir_name: dirName })),
  };
}

/** Read one bundle's log snapshot into a scratch session dir and make its catalog entry. */
async function entryOfBundle(zip: string, scratch: string): Promise<CatalogEntry> {
  const { default: yauzl } = await import('yauzl'); // the default: a bundler gives a CommonJS module no named exports
  const file = await yauzl.openPromise(zip, {
    lazyEntries: true,
    validateEntrySizes: true,
    autoClose: false,
  });
  try {
    let found: { entry: Entry; top: string } | null = null;
    for await (const entry of file.eachEntry()) {
      const parts = entry.fileName.split('/');
      if (parts.length === 2 && parts[1] === LOG_FILE && isPortableDirName(parts[0]!)) {
        found = { entry, top: parts[0]! };
        break;
      }
    }
    if (!found) throw new Error(`no <session dir>/${LOG_FILE} in the bundle (built with --no-db?)`);
    if (found.entry.uncompressedSize > MAX_LOG_BYTES) throw new Error(`${LOG_FILE} is larger than 2 GiB`);
    const dir = path.join(scratch, found.top);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    await pipeline(
      await file.openReadStreamPromise(found.entry),
      fs.createWriteStream(path.join(dir, LOG_FILE)),
    );
    // A foreign log is data: checked against our schema before any query runs on it.
    const problem = foreignLogProblem(path.join(dir, LOG_FILE));
    if (problem) {
      removeBestEffort(dir);
      throw new Error(`its ${LOG_FILE} is refused: ${problem}`);
    }
    const entry = readCatalogEntry(dir);
    removeBestEffort(dir);
    if (entry.session.error !== null)
      throw new Error(`its ${LOG_FILE} cannot be read: ${entry.session.error}`);
    return entry;
  } finally {
    file.close();
  }
}
