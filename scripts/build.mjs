#!/usr/bin/env node
// Builds dist/: tsc, then mcec-bundle's entry bundled by esbuild into one module plus the chunks it loads
// lazily. Node 20 loads ESM files one by one (74 for a bundle, 14 for --help): one file starts `--help`
// about 17 ms sooner and a bundle about 60 ms sooner. The chunks sit beside the entry in dist/cli/, two levels
// under the package root like every module, so paths made from `import.meta.url` (templates, schema,
// package.json) resolve as they do unbundled. Exits with tsc's code: tsc still emits on type errors, and the
// bundle is made from what it emitted (`npm run typecheck` is what judges types).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const cli = path.join(root, 'dist', 'cli');
const CHUNK_PREFIX = 'mcec-bundle-';

const tsc = spawnSync(
  process.execPath,
  [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
const entry = path.join(cli, 'mcec-bundle.js');
if (!fs.existsSync(entry)) {
  console.error('build: tsc emitted no dist/cli/mcec-bundle.js');
  process.exit(tsc.status || 1);
}

// Chunks of an earlier build are named by their hashes: remove them so none is left behind.
for (const name of fs.readdirSync(cli)) if (name.startsWith(CHUNK_PREFIX)) fs.rmSync(path.join(cli, name));
const { build } = await import('esbuild');
await build({
  entryPoints: [entry],
  outdir: cli,
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  chunkNames: `${CHUNK_PREFIX}[name]-[hash]`,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Native addons stay packages; the CommonJS ones bundled (commander) need `require` in an ES module.
  external: ['better-sqlite3', 'sharp'],
  banner: {
    js: "import { createRequire as __mcecRequire } from 'node:module'; const require = __mcecRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
process.exit(tsc.status ?? 1);
