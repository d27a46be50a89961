/**
 * The JSON Schemas of schema/ as an MCP client gets them. A tool's outputSchema is the schema file its
 * structured content follows (the same file `--json` output follows), made self-contained: references to
 * other files (`urn:mcec-recorder:schema:NAME#/$defs/DEF`) are copied into its own `$defs`, since a client
 * cannot fetch them, and `$schema`/`$id` are dropped so a draft-07 validator (the SDK client's) reads it.
 */
import { readFileSync } from 'node:fs';

const URN = 'urn:mcec-recorder:schema:';

type Json = Record<string, unknown>;

const files = new Map<string, Json>();

/** A schema file of schema/ by its base name (`triage` for triage.schema.json), parsed once. */
export function schemaFile(name: string): Json {
  let schema = files.get(name);
  if (!schema) {
    // `../../schema` is the package root's schema/ from src/mcp-server, dist/mcp-server and dist/cli alike.
    const file = new URL(`../../schema/${name}.schema.json`, import.meta.url);
    schema = JSON.parse(readFileSync(file, 'utf8')) as Json;
    files.set(name, schema);
  }
  return schema;
}

/** A local `$defs` key for a definition of another file (`diff.call`), or of its root (`diff.`). */
function localKey(file: string, def: string): string {
  return `${file}.${def}`;
}

/** Schema `name` with every reference to another file inlined under `$defs`; `$schema` and `$id` dropped. */
export function publishedSchema(name: string): Json {
  const defs: Json = {};
  const pending: Array<{ file: string; def: string }> = [];
  const seen = new Set<string>();

  // Rewrites refs inside `node`, which comes from `file`: local ones to their new keys (when `file` is not
  // the root schema), other files' ones to local keys queued for copying.
  const rewrite = (node: unknown, file: string, isRoot: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => rewrite(n, file, isRoot));
    if (node === null || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node as Json)) {
      if (k === '$ref' && typeof v === 'string') out[k] = refTo(v, file, isRoot);
      else if (k === '$schema' || k === '$id' || (k === '$defs' && !isRoot)) continue;
      else out[k] = rewrite(v, file, isRoot);
    }
    return out;
  };
  const refTo = (ref: string, file: string, isRoot: boolean): string => {
    let target = file;
    let pointer = ref;
    if (ref.startsWith(URN)) {
      const hash = ref.indexOf('#');
      target = ref.slice(URN.length, hash < 0 ? undefined : hash);
      pointer = hash < 0 ? '#' : ref.slice(hash);
    }
    if (target === name && isRoot) return pointer;
    const def = pointer === '#' ? '' : pointer.replace(/^#\/\$defs\//, '');
    if (def.includes('/')) throw new Error(`schema ${name}: cannot inline ${ref}`);
    const key = localKey(target, def);
    if (!seen.has(key)) {
      seen.add(key);
      pending.push({ file: target, def });
    }
    return `#/$defs/${key}`;
  };

  const root = rewrite(schemaFile(name), name, true) as Json;
  while (pending.length > 0) {
    const { file, def } = pending.shift()!;
    const source = schemaFile(file);
    const node = def === '' ? source : (source.$defs as Json | undefined)?.[def];
    if (node === undefined) throw new Error(`schema ${name}: ${file} has no $defs/${def}`);
    defs[localKey(file, def)] = rewrite(node, file, false);
  }
  if (Object.keys(defs).length > 0) root.$defs = { ...((root.$defs as Json | undefined) ?? {}), ...defs };
  return root;
}
