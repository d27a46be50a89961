/**
 * Redaction whatever the secrets' shape and however they arrive: random base64url secrets (an automaton
 * with long child lists), one new secret per call (batched, never a full rebuild per secret), a learned
 * secret used as an object key, PGP private key blocks. Through the redactor and, for keys, a real log.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { Automaton } from '../../src/redact/automaton.js';
import { createRedactor, type Redactor } from '../../src/redact/index.js';
import { SecretStore } from '../../src/redact/secret-store.js';
import { mcecStringify } from '../contract/fixtures.js';
import { logTexts } from '../reliability/helpers.js';
import { removeDir, tempDir } from '../support/temp.js';

const root = tempDir('mcec-learned-');
afterAll(() => removeDir(root));

/** Every span a naive search finds, merged as Automaton.find merges them. */
function naiveSpans(text: string, patterns: string[]) {
  const lower = text.toLowerCase();
  const marks = new Array<boolean>(text.length).fill(false);
  const starts: Array<[number, number]> = [];
  for (const p of patterns) {
    const lp = p.toLowerCase();
    for (let at = lower.indexOf(lp); at !== -1; at = lower.indexOf(lp, at + 1))
      starts.push([at, at + lp.length]);
  }
  for (const [s, e] of starts) for (let i = s; i < e; i++) marks[i] = true;
  const out: Array<{ start: number; end: number }> = [];
  for (let i = 0; i < text.length; i++) {
    if (!marks[i]) continue;
    const start = i;
    while (i < text.length && marks[i]) i++;
    out.push({ start, end: i });
  }
  return out;
}

describe('random secrets', () => {
  it('the automaton with dense rows finds what a naive search finds (random patterns over a small alphabet)', () => {
    let seed = 42;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const alphabet = 'abcdAB-_0';
    const word = (n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]).join('');
    for (let round = 0; round < 200; round++) {
      const patterns = Array.from({ length: 1 + Math.floor(rnd() * 40) }, () =>
        word(1 + Math.floor(rnd() * 5)),
      );
      const text = word(300);
      const a = new Automaton(patterns);
      // Adjacent spans merge only when they overlap or touch in find(); naive merges touching runs too.
      const found = a.find(text);
      const covered = new Set<number>();
      for (const s of found) for (let i = s.start; i < s.end; i++) covered.add(i);
      const expected = new Set<number>();
      for (const s of naiveSpans(text, patterns)) for (let i = s.start; i < s.end; i++) expected.add(i);
      expect([...covered].sort((x, y) => x - y)).toEqual([...expected].sort((x, y) => x - y));
    }
  });

  it('1,000 random base64url secrets are each scrubbed, in any case, from one long text', () => {
    const r = createRedactor();
    const secrets = Array.from({ length: 1000 }, () => randomBytes(15).toString('base64url'));
    for (const s of secrets) r.redactArgs('launch', { password: s });
    const text = secrets.map((s, i) => `line ${i}: ${i % 3 === 0 ? s.toUpperCase() : s} ok`).join('\n');
    const out = r.scrubText(text);
    for (const s of secrets) expect(out.toLowerCase()).not.toContain(s.toLowerCase());
    expect(out).toContain('line 999: [redacted] ok');
  });

  it('a new password on every call is scrubbed from the next answer, before and after the batch rebuild', () => {
    const r = createRedactor();
    for (let i = 0; i < 1000; i++)
      r.redactArgs('launch', { password: randomBytes(15).toString('base64url') });
    const leaks: string[] = [];
    for (let i = 0; i < 100; i++) {
      const pw = randomBytes(12).toString('base64url');
      r.redactArgs('type', { password: pw });
      const out = JSON.stringify(
        r.redact({ ok: true, result: { echo: `saved with ${pw} and ${pw.toUpperCase()}` } }),
      );
      if (out.toLowerCase().includes(pw.toLowerCase())) leaks.push(pw);
      // A long text (the big automaton is rebuilt before it) too.
      if (i % 25 === 0) {
        const long = `${'x'.repeat(70 * 1024)} ${pw}`;
        if (r.scrubText(long).includes(pw)) leaks.push(`long ${pw}`);
      }
    }
    expect(leaks).toEqual([]);
  });
});

describe('the fold rule: recent secrets join the main automaton once their second pass cost a rebuild', () => {
  it('values wait in the small automaton while little text is scanned, and fold once enough is', () => {
    const store = new SecretStore();
    for (let i = 0; i < 50; i++) store.add(randomBytes(15).toString('base64url'), 'args');
    expect(store.scrub('nothing here', '#')).toBe('nothing here'); // the main automaton is built
    expect(store.pending().trusted).toEqual({ values: 0, scanLeft: 0 });
    const fresh = randomBytes(15).toString('base64url');
    store.add(fresh, 'args');
    const { values, scanLeft } = store.pending().trusted;
    expect(values).toBe(1);
    // About one rebuild's worth of scanning: many envelopes' strings, far more than one short text.
    expect(scanLeft).toBeGreaterThan(10_000);
    const line = `seen ${fresh} once; `;
    let scans = 0;
    // Each scan finds the pending value and spends its length of the budget, until the values fold in.
    while (store.pending().trusted.values > 0) {
      const before = store.pending().trusted.scanLeft;
      expect(store.scrub(line, '#')).toBe('seen # once; ');
      scans++;
      if (store.pending().trusted.values > 0)
        expect(store.pending().trusted.scanLeft).toBe(before - line.length);
    }
    expect(scans).toBe(Math.ceil(scanLeft / line.length));
    // Folded: the main automaton holds it now, in every form and case.
    expect(store.pending().trusted).toEqual({ values: 0, scanLeft: 0 });
    expect(store.scrub(`${fresh.toUpperCase()} ${encodeURIComponent(fresh)}`, '#')).toBe('# #');
  });

  it('a text longer than what is left folds first (one pass over it, not two); the 33rd value folds too', () => {
    const store = new SecretStore();
    store.add('Configured-Secret-1', 'config');
    store.scrub('warm', '#');
    store.add('Learned-Secret-2', 'args');
    const left = store.pending().trusted.scanLeft;
    expect(store.scrub(`${'x'.repeat(left)} Learned-Secret-2`, '#')).toBe(`${'x'.repeat(left)} #`);
    expect(store.pending().trusted.values).toBe(0);
    // Values arriving one per call: the small automaton holds up to 32, the next one folds them all.
    for (let i = 0; i < 32; i++) {
      store.add(`Learned-Batch-${i}`, 'args');
      expect(store.scrub(`a Learned-Batch-${i} b`, '#')).toBe('a # b');
    }
    expect(store.pending().trusted.values).toBe(32);
    store.add('Learned-Batch-32', 'args');
    expect(store.scrub('Learned-Batch-32 Learned-Batch-0 Configured-Secret-1', '#')).toBe('# # #');
    expect(store.pending().trusted.values).toBe(0);
  });

  it('server output has its own pending values: its fold never rebuilds the trusted automaton', () => {
    const store = new SecretStore();
    store.add('Argument-Secret-1', 'args');
    store.add('Output-Secret-1x', 'output');
    store.scrub('warm', '#');
    store.add('Output-Secret-2x', 'output');
    expect(store.pending()).toEqual({
      trusted: { values: 0, scanLeft: 0 },
      output: { values: 1, scanLeft: expect.any(Number) },
    });
    expect(store.scrub('Output-Secret-2x Argument-Secret-1', '#')).toBe('# #');
    // Trusted-only scans (codes, keys) never pass the output automaton, so they spend nothing of its budget.
    const left = store.pending().output.scanLeft;
    store.scrub('Output-Secret-2x', '#', true);
    expect(store.pending().output.scanLeft).toBe(left);
  });
});

/** Ref'd immediates (an unref'd one never keeps the process alive and is not listed). */
const refImmediates = () => process.getActiveResourcesInfo().filter((r) => r === 'Immediate').length;
/** Turns of the event loop until `done` (at most 10,000: a fold of 1,000 secrets takes about a dozen). */
async function turnsUntil(done: () => boolean): Promise<number> {
  let turns = 0;
  while (!done() && turns < 10_000) {
    await new Promise((resolve) => setImmediate(resolve));
    turns++;
  }
  return turns;
}
/** The redactor's store, read to see where its fold stands (the Redactor interface does not expose it). */
const storeOf = (r: Redactor) => (r as unknown as { store: SecretStore }).store;

describe('a fold of 1,000 secrets runs in steps; every value stays covered until the swap', () => {
  it('values pending before and during the fold are found by the old automaton plus the pending ones', async () => {
    const store = new SecretStore();
    const configured = Array.from({ length: 1000 }, random);
    for (const s of configured) store.add(s, 'config');
    expect(store.scrub('warm', '#')).toBe('warm');
    const before = Array.from({ length: 33 }, random);
    for (const s of before) store.add(s, 'args');
    // Past 32 values the next scan starts a fold; 1,000 secrets take about a dozen steps, the first done at once.
    expect(store.folding().trusted).toBe(false);
    expect(store.scrub(`go ${before[32]}`, '#')).toBe('go #');
    expect(store.folding().trusted).toBe(true);
    expect(store.pending().trusted.values).toBe(33);
    expect(refImmediates()).toBe(0);
    const during = random();
    store.add(during, 'args');
    expect(store.folding().trusted).toBe(true);
    const text = [configured[0], configured[999], before[0], before[32], during.toUpperCase()].join(' | ');
    expect(store.scrub(text, '#')).toBe('# | # | # | # | #');
    // The next turns finish it: the 33 are in the main automaton now, the one learned during it still pending.
    await turnsUntil(() => !store.folding().trusted);
    expect(store.folding().trusted).toBe(false);
    expect(store.pending().trusted.values).toBe(1);
    expect(store.scrub(text, '#')).toBe('# | # | # | # | #');
    expect(store.scrub(encodeURIComponent(`${before[5]}/${during}`), '#')).toBe('#%2F#');
  });

  it('through the redactor: an envelope, scrubText, and JSON-escaped text, during the fold and after it', async () => {
    const configured = Array.from({ length: 1000 }, random);
    const r = createRedactor({ secrets: configured });
    expect(r.scrubText('warm')).toBe('warm');
    // Secrets with characters JSON escapes (MCEC writes + as \u002B, " as \").
    const taught = Array.from({ length: 33 }, () => `Pw+"${random()}"`);
    for (const pw of taught) r.redactArgs('login', { password: pw });
    expect(r.scrubText('going')).toBe('going');
    expect(storeOf(r).folding().trusted).toBe(true);
    const during = `Pw+"${random()}"`;
    r.redactArgs('login', { password: during });
    expect(storeOf(r).folding().trusted).toBe(true);
    const check = () => {
      const env = { ok: false, error: { detail: `rejected ${taught[0]} and ${taught[32]}, then ${during}` } };
      for (const out of [
        JSON.stringify(r.redact(env)),
        r.scrubText(env.error.detail),
        r.scrubText(mcecStringify(env)),
        r.scrubText(JSON.stringify(JSON.stringify(env))),
        r.scrubText(`key ${configured[500]}`),
      ]) {
        for (const pw of [taught[0]!, taught[32]!, during, configured[500]!]) {
          const core = pw.replace(/^Pw\+"|"$/g, '');
          expect(out).not.toContain(core);
        }
      }
    };
    check();
    expect(storeOf(r).folding().trusted).toBe(true);
    await turnsUntil(() => !storeOf(r).folding().trusted);
    expect(storeOf(r).folding().trusted).toBe(false);
    expect(storeOf(r).pending().trusted.values).toBe(1);
    check();
  });

  it('a fold never keeps the process alive, and dispose cancels it without dropping a value', () => {
    const { store, taught } = storeMidFold();
    expect(refImmediates()).toBe(0); // its next step is scheduled unref'd
    store.dispose();
    expect(store.folding().trusted).toBe(false);
    expect(refImmediates()).toBe(0);
    expect(store.pending().trusted.values).toBe(33);
    expect(store.scrub(`${taught[0]} ${taught[32]}`, '#')).toBe('# #');
  });

  it("with no turn of the event loop, another rebuild's worth of scanning finishes the fold at once", () => {
    const { store, taught } = storeMidFold();
    const left = store.pending().trusted.scanLeft;
    expect(left).toBeGreaterThan(0);
    expect(store.scrub(`${'x'.repeat(left)} ${taught[7]}`, '#')).toBe(`${'x'.repeat(left)} #`);
    expect(store.folding().trusted).toBe(false);
    expect(store.pending().trusted).toEqual({ values: 0, scanLeft: 0 });
  });

  it('a flood learned at once (one envelope teaching 1,000) costs one rebuild, not a fold per 33', () => {
    const store = new SecretStore();
    for (let i = 0; i < 1000; i++) store.add(random(), 'config');
    store.scrub('warm', '#');
    const flood = Array.from({ length: 1000 }, random);
    for (const s of flood) store.add(s, 'args');
    expect(store.folding().trusted).toBe(false);
    expect(store.pending().trusted.values).toBe(1000);
    // The next scan folds them all at once (more than 8 chunks of 32 would cost every later scan).
    expect(store.scrub(`${flood[0]} ${flood[999]}`, '#')).toBe('# #');
    expect(store.folding().trusted).toBe(false);
    expect(store.pending().trusted).toEqual({ values: 0, scanLeft: 0 });
  });

  it('learned in a loop with no turn of the event loop, each value advances the fold one step', () => {
    const store = new SecretStore();
    for (let i = 0; i < 1000; i++) store.add(random(), 'config');
    store.scrub('warm', '#');
    const taught: string[] = [];
    let folds = 0;
    let wasFolding = false;
    for (let i = 0; i < 200; i++) {
      const s = random();
      taught.push(s);
      store.add(s, 'args');
      const folding = store.folding().trusted;
      if (wasFolding && !folding) folds++;
      wasFolding = folding;
      expect(store.scrub(`a ${s} b ${taught[0]}`, '#')).toBe('a # b #');
    }
    // Folds completed without a single turn, and fewer than 33 + a fold's steps values ever wait.
    expect(folds).toBeGreaterThan(0);
    expect(store.pending().trusted.values).toBeLessThan(33 + 64);
  });
});

describe('a learned secret as an object key; PGP private keys', () => {
  it('the key is scrubbed in the stored envelope; a PGP private key block is redacted', async () => {
    const sessionsDir = path.join(root, 'sessions');
    const recorder = createRecorder({ sessionsDir, stderr: () => {} });
    const secret = `Tk-${randomBytes(12).toString('base64url')}`;
    const pgp = [
      '-----BEGIN PGP PRIVATE KEY BLOCK-----',
      '',
      'lQOYBGVxQ2kBCADJ3n8q0Yh2Kf8bLz1o9wT4vX7uP3rS6mN1aB5cD8eF2gH4iJ6k',
      'L9mN0oP3qR5sT7uV9wX1yZ3aB5cD7eF9gH1iJ3kL5mN7oP9qR1sT3uV5wX7yZ9a',
      '=Xy7Q',
      '-----END PGP PRIVATE KEY BLOCK-----',
    ].join('\n');
    const dispatch = recorder.wrap(async (tool: string, _args: Record<string, unknown>) =>
      tool === 'login'
        ? { ok: true, sessionId: 's1', result: { sessions: { [secret]: { user: 'ann' }, other: 1 } } }
        : { ok: true, sessionId: 's1', result: { text: `exported:\n${pgp}\ndone` } },
    );
    await dispatch('login', { sessionId: 's1', password: secret });
    await dispatch('get-text', { sessionId: 's1', window: 'Kleopatra' });
    await recorder.close();
    const dir = fs.readdirSync(sessionsDir).find((d) => d.endsWith('-s1'))!;
    const texts = logTexts(path.join(sessionsDir, dir, 'session.sqlite'));
    const all = texts.map((t) => t.text).join('\n');
    expect(all).not.toContain(secret);
    expect(all).not.toContain('lQOYBGVxQ2kBCADJ3n8q0Yh2Kf8bLz1o9wT4vX7uP3rS6mN1aB5cD8eF2gH4iJ6k');
    // What is not secret stays.
    expect(all).toContain('"user":"ann"');
    expect(all).toContain('"other":1');
    expect(all).toContain('exported:');
  });
});

/** A random base64url secret of 20 chars. */
function random(): string {
  return randomBytes(15).toString('base64url');
}

/** A store of 1,000 random configured secrets whose 33rd learned one started a fold, still under way. */
function storeMidFold() {
  const store = new SecretStore();
  for (let i = 0; i < 1000; i++) store.add(random(), 'config');
  store.scrub('warm', '#');
  const taught = Array.from({ length: 33 }, random);
  for (const s of taught) store.add(s, 'args');
  store.scrub('going', '#');
  expect(store.folding().trusted).toBe(true);
  return { store, taught };
}
