/** This package's version, read once from its package.json (two levels up from src/bundle and dist/bundle). */
import fs from 'node:fs';

let cached: string | null = null;

/** The mcec-recorder version that writes bundles, or '0.0.0' when package.json cannot be read. */
export function packageVersion(): string {
  if (cached !== null) return cached;
  try {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    cached = typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    cached = '0.0.0';
  }
  return cached;
}
