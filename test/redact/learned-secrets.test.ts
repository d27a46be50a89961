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
