import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CATEGORIES,
  findImageBytes,
  getAtPointer,
  isErrorCategory,
  readToolOutput,
  validateEnvelope,
} from '../../src/contract/index.js';
import { redPng } from '../support/images.js';
import { callToolResult, mcecStringify } from './fixtures.js';

const pngBase64 = (await redPng()).toString('base64');
const RUNS = { numRuns: 300 };

const kebab = fc
  .array(fc.stringMatching(/^[a-z0-9]{1,8}$/), { minLength: 1, maxLength: 4 })
  .map((words) => words.join('-'));
const text = fc.string({ unit: 'binary', maxLength: 40 });
const warning = fc.record({ code: kebab, detail: text });
const jsonObject = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });
const base = {
  sessionId: fc.option(fc.stringMatching(/^[0-9a-f]{12}$/), { nil: null }),
  warnings: fc.array(warning, { maxLength: 3 }),
};
const success = fc.record(
  { ...base, ok: fc.constant(true as const), result: fc.option(jsonObject, { nil: null }) },
  { requiredKeys: ['ok'] },
);
const toolError = fc.record(
  {
    code: kebab,
    category: fc.constantFrom(...ERROR_CATEGORIES),
    detail: text,
    lastObservation: fc.option(jsonObject, { nil: null }),
    partialResult: fc.option(jsonObject, { nil: null }),
  },
  { requiredKeys: ['code', 'category', 'detail'] },
);
const failure = fc.record(
  { ...base, ok: fc.constant(false as const), error: toolError, result: fc.constant(null) },
  { requiredKeys: ['ok', 'error'] },
);
/** Valid envelopes (selector-matched codes aside, which the generator cannot produce by chance in a bad category). */
const envelope = fc.oneof(success, failure).filter((e) => {
  const code = (e as { error?: { code: string } }).error?.code ?? '';
  return !code.startsWith('selector-matched');
});

/** One random change to an envelope: a key set to any JSON value, a key deleted, or a stray key added. */
const mutation = fc.oneof(
  fc.record({
    op: fc.constant('set' as const),
    key: fc.constantFrom('ok', 'sessionId', 'result', 'warnings', 'error'),
    value: fc.jsonValue({ maxDepth: 3 }),
  }),
  fc.record({
    op: fc.constant('delete' as const),
    key: fc.constantFrom('ok', 'error', 'result'),
    value: fc.constant(null),
  }),
  fc.record({
    op: fc.constant('errorField' as const),
    key: fc.constantFrom('code', 'category', 'detail', 'lastObservation', 'partialResult', 'extra'),
    value: fc.jsonValue({ maxDepth: 2 }),
  }),
  fc.record({
    op: fc.constant('stray' as const),
    key: fc.string({ maxLength: 6 }),
    value: fc.jsonValue({ maxDepth: 2 }),
  }),
);

function mutate(
  env: Record<string, unknown>,
  m: { op: string; key: string; value: unknown },
): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(env)) as Record<string, unknown>;
  if (m.op === 'set') copy[m.key] = m.value;
  else if (m.op === 'delete') delete copy[m.key];
  else if (m.op === 'errorField') copy.error = { ...((copy.error as object) ?? {}), [m.key]: m.value };
  else copy[m.key] = m.value;
  return copy;
}

function checkToolOutputShape(value: unknown): void {
  const out = readToolOutput(value);
  expect(Array.isArray(out.images)).toBe(true);
  expect(Array.isArray(out.violations)).toBe(true);
  if (out.kind === 'json-rpc-error') {
    expect(out.fault).toBeDefined();
    return;
  }
  // Every other kind yields an envelope downstream code can rely on.
  const env = out.envelope!;
  expect(typeof env.ok).toBe('boolean');
  if (!env.ok) {
    expect(typeof env.error.code).toBe('string');
    expect(isErrorCategory(env.error.category)).toBe(true);
    expect(typeof env.error.detail).toBe('string');
  }
  if (out.kind === 'invalid') expect(out.violations.length).toBeGreaterThan(0);
}

describe('properties: nothing throws, whatever it is given', () => {
  it('validateEnvelope, readToolOutput and findImageBytes on arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const res = validateEnvelope(v);
        expect(typeof res.valid).toBe('boolean');
        expect(res.valid).toBe(res.violations.length === 0);
        checkToolOutputShape(v);
        expect(Array.isArray(findImageBytes(v))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('on arbitrary JSON wrapped as CallToolResult text, JSON-RPC result and legacy output', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (v, isError) => {
        const ctr = { content: [{ type: 'text', text: mcecStringify(v) }], isError };
        checkToolOutputShape(ctr);
        checkToolOutputShape({ jsonrpc: '2.0', id: 1, result: ctr });
        checkToolOutputShape({ success: false, command: 'x', data: v, error: v, errorCode: v, warnings: v });
        findImageBytes({ result: { output: JSON.stringify(v) } });
      }),
      RUNS,
    );
  });

  it('on arbitrary JS values that are not JSON', () => {
    fc.assert(
      fc.property(
        fc.anything({ withMap: true, withSet: true, withBigInt: true, withTypedArray: true }),
        (v) => {
          validateEnvelope(v);
          checkToolOutputShape(v);
          findImageBytes(v);
        },
      ),
      RUNS,
    );
  });
});

describe('properties: envelopes', () => {
  it('generated envelopes validate and read back unchanged through MCEC escaping', () => {
    fc.assert(
      fc.property(envelope, (env) => {
        expect(validateEnvelope(env).violations).toEqual([]);
        const out = readToolOutput(callToolResult(env));
        expect(out.violations).toEqual([]);
        expect(out.envelope).toEqual(JSON.parse(JSON.stringify(env)));
      }),
      RUNS,
    );
  });

  it('mutated envelopes never throw and always read to a usable envelope', () => {
    fc.assert(
      fc.property(envelope, mutation, (env, m) => {
        const bad = mutate(env as Record<string, unknown>, m);
        const res = validateEnvelope(bad);
        expect(res.valid).toBe(res.violations.length === 0);
        checkToolOutputShape(bad);
        checkToolOutputShape(callToolResult({ ok: true, ...bad }));
      }),
      RUNS,
    );
  });

  it('a stray top-level key or a category outside the set is always a violation', () => {
    const known = new Set(['ok', 'sessionId', 'result', 'warnings', 'error']);
    fc.assert(
      fc.property(
        envelope,
        fc.string({ maxLength: 6 }),
        fc.string({ maxLength: 12 }),
        (env, key, category) => {
          fc.pre(!known.has(key) && !isErrorCategory(category));
          const stray = { ...env, [key]: 1 };
          expect(validateEnvelope(stray).violations.map((v) => v.path)).toContain(
            `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`,
          );
          const badCategory = { ok: false, error: { code: 'x', category, detail: '' } };
          expect(validateEnvelope(badCategory).violations.map((v) => v.path)).toContain('/error/category');
        },
      ),
      RUNS,
    );
  });
});

describe('properties: image bytes', () => {
  /** A path into a JSON value, built by walking it to a random depth. */
  function insertAt(
    root: unknown,
    steps: number[],
    keyName: string,
    bytes: string,
  ): { root: unknown; path: string } {
    const holder = { root } as Record<string, unknown>;
    let parent: Record<string, unknown> | unknown[] = holder;
    let key: string | number = 'root';
    let path = '';
    for (const step of steps) {
      const cur: unknown = Array.isArray(parent) ? parent[key as number] : parent[key as string];
      if (Array.isArray(cur) && cur.length > 0) {
        parent = cur;
        key = step % cur.length;
        path += `/${key}`;
      } else if (cur !== null && typeof cur === 'object' && Object.keys(cur).length > 0) {
        const keys = Object.keys(cur);
        parent = cur as Record<string, unknown>;
        key = keys[step % keys.length]!;
        path += `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      } else break;
    }
    const container = { [keyName]: bytes };
    if (Array.isArray(parent)) parent[key as number] = container;
    else parent[key as string] = container;
    return { root: holder.root, path: `${path}/${keyName}` };
  }

  it('finds PNG bytes planted anywhere in arbitrary JSON, and the path resolves to them', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.constantFrom('base64', 'png', 'img'),
        fc.constantFrom('raw', 'uri', 'nested-json'),
        (json, steps, keyName, how) => {
          const bytes = how === 'uri' ? `data:image/png;base64,${pngBase64}` : pngBase64;
          const planted = insertAt(JSON.parse(JSON.stringify(json)), steps, keyName, bytes);
          const value = how === 'nested-json' ? { wrapper: JSON.stringify(planted.root) } : planted.root;
          const path = how === 'nested-json' ? `/wrapper/#json${planted.path}` : planted.path;
          const locs = findImageBytes(value);
          const hit = locs.find((l) => l.path === path);
          expect(hit).toBeDefined();
          expect(hit!.format).toBe('png');
          expect(getAtPointer(value, path)).toBe(bytes);
          for (const l of locs) expect(typeof getAtPointer(value, l.path)).toBe('string');
        },
      ),
      RUNS,
    );
  });
});
