/**
 * better-sqlite3's native addon, named by path. Without `nativeBinding` better-sqlite3 asks the `bindings`
 * package, which finds the package's root from a stack trace and then the file among a dozen candidates:
 * about 8 ms of every command that opens a database (`list`'s start-up). The two candidates `bindings` tries
 * before build/Release are checked first (a debug build wins there too); any other layout is left to it.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const ADDON_FILE = 'better_sqlite3.node';
let option: { nativeBinding?: string } | undefined;

/** `{ nativeBinding }` for `new Database(file, { ...addonOption() })`, or `{}` to let `bindings` find it. */
export function addonOption(): { nativeBinding?: string } {
  if (option) return option;
  option = {};
  try {
    const build = path.join(
      path.dirname(createRequire(import.meta.url).resolve('better-sqlite3')),
      '..',
      'build',
    );
    const release = path.join(build, 'Release', ADDON_FILE);
    if (
      !fs.existsSync(path.join(build, ADDON_FILE)) &&
      !fs.existsSync(path.join(build, 'Debug', ADDON_FILE)) &&
      fs.existsSync(release)
    )
      option = { nativeBinding: release };
  } catch {
    // not resolvable from here: bindings' own search
  }
  return option;
}
