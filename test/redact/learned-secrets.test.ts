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
import { createRedactor } from '../../src/redact/index.js';
import { SecretStore } from '../../src/redact/secret-store.js';
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
