/**
 * Redaction cost with 1 and with 1,000 remembered secrets: the same envelopes redacted by two redactors in
 * the same run, arms alternated. The budgets compare each arm's fastest round: on a shared machine other
 * work only ever adds time, so the fastest of many short rounds is the cost least disturbed by it (medians
 * of a few rounds swung from 1.0x to 1.48x between runs under a load of 11 on 2 cores). Matching runs one
 * Aho-Corasick pass over each string, so the ratio should stay near 1 (before: ~15x, every string scanned
 * once per secret).
 */
import { randomBytes } from 'node:crypto';
import { createRedactor, type Redactor } from '../src/redact/index.js';
import { alternate, fmtMs, median, nowMs, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

/** The fastest round: the cost least disturbed by other work on the machine. */
const fastest = (values: readonly number[]) => Math.min(...values);

/** A `windows` answer and a failure with a long detail: the strings a recorder redacts on every call. */
function envelopes(): unknown[] {
  const windows = Array.from({ length: 24 }, (_, i) => ({
    handle: 1000 + i,
    title: `Document ${i} - Notepad`,
    className: 'Notepad',
    processName: 'notepad',
    processId: 4000 + i,
    x: 10 * i,
    y: 20,
    width: 800,
    height: 600,
  }));
  const failure = {
    ok: false,
    sessionId: '5f19c9c01a3f',
    error: {
      code: 'selector-matched-3',
      category: 'ambiguous-selector',
      detail: `Selector {by: name, value: Save} matched 3 elements: ${'Button "Save" at (120, 340); '.repeat(20)}`,
    },
  };
  return [{ ok: true, sessionId: '5f19c9c01a3f', result: { count: windows.length, windows } }, failure];
}

/**
 * A redactor that remembers `n` secrets learned from arguments: distinct, 16-24 chars, sharing a `pw-`
 * prefix, or (`random`) 20 random base64url characters each, as real tokens are: the shape that makes a
 * naive automaton's every step walk a long child list.
 */
function redactorWith(n: number, random = false): Redactor {
  const r = createRedactor();
  for (let i = 0; i < n; i++)
    r.redactArgs('launch', {
      password: random
        ? randomBytes(15).toString('base64url')
        : `pw-${i.toString(36)}-${(i * 7919).toString(16)}-Zq!`,
    });
  return r;
}

/** A 1 MiB log text (a get-text result, say): one long string. */
function bigText(): string {
  const line = 'INFO 2026-12-02T10:15:02Z worker 7 processed item 4242 in 13 ms; queue depth 3\n';
  return line.repeat(Math.ceil((1024 * 1024) / line.length)).slice(0, 1024 * 1024);
}

export const figure: Figure = {
  id: 'redaction',
  title: 'Redaction cost with 1 and 1,000 remembered secrets',
  async run(ctx) {
    const rounds = ctx.quick ? 16 : 40;
    const perRound = ctx.quick ? 100 : 500;
    const one = redactorWith(1);
    const many = redactorWith(1000);
    const random = redactorWith(1000, true);
    const envs = envelopes();
    const text = bigText();
    const perCall = (r: Redactor) => async () => {
      const t0 = nowMs();
      for (let i = 0; i < perRound; i++) for (const e of envs) r.redact(e);
      return (nowMs() - t0) / (perRound * envs.length);
    };
    const perText = (r: Redactor) => async () => {
      const t0 = nowMs();
      r.scrubText(text);
      return nowMs() - t0;
    };
    // Warm-up: the automata are built on first use, the JIT settles.
    for (let i = 0; i < 3; i++) {
      for (const r of [one, many, random]) {
        await perCall(r)();
        await perText(r)();
      }
    }
    const calls = await alternate(rounds, {
      one: perCall(one),
      many: perCall(many),
      random: perCall(random),
    });
    const texts = await alternate(rounds, {
      one: perText(one),
      many: perText(many),
      random: perText(random),
    });
    const cRandom = fastest(calls.random);
    const tRandom = fastest(texts.random);
    // A new password on every call (learned from arguments) while 1,000 are remembered.
    const learner = redactorWith(1000, true);
    const learnRounds = ctx.quick ? 100 : 500;
    const learnTimes: number[] = [];
    for (let i = 0; i < learnRounds; i++) {
      const t = nowMs();
      learner.redactArgs('type', { password: randomBytes(12).toString('base64url'), window: 'Notepad' });
      learner.redact({ ok: true, result: { text: `saved ${i}` } });
      learnTimes.push(nowMs() - t);
    }
    const learnMs = learnTimes.reduce((a, b) => a + b, 0) / learnRounds;
    const learnWorst = Math.max(...learnTimes);
    const c1 = fastest(calls.one);
    const c1000 = fastest(calls.many);
    const t1 = fastest(texts.one);
    const t1000 = fastest(texts.many);

    // A hostile server teaching a new token=... value on every call: the output pool's automaton is rebuilt.
    const flood = redactorWith(1000);
    const floodRounds = ctx.quick ? 200 : 1000;
    const t0 = nowMs();
    for (let i = 0; i < floodRounds; i++)
      flood.redact({ ok: true, result: { log: `retry token=Fl00d-${i}-abcdefgh` } });
    const floodMs = (nowMs() - t0) / floodRounds;
    // One envelope whose 1,000 strings each teach a new value: one rebuild for the envelope, not 1,000.
    const burst = redactorWith(1000);
    const t1b = nowMs();
    burst.redact({
      ok: true,
      result: { lines: Array.from({ length: 1000 }, (_, i) => `token=Burst-${i}-abcdefgh`) },
    });
    const burstMs = nowMs() - t1b;

    // The arguments of a small call (a find), as every call's are redacted: against a plain JSON copy.
    const smallArgs = {
      selector: { name: 'OK', controlType: 'Button' },
      sessionId: '5f19c9c01a3f',
      timeoutMs: 500,
    };
    const argsRedactor = createRedactor();
    argsRedactor.rememberSecret('Bearer abcdefgh');
    const argsRounds = ctx.quick ? 2_000 : 20_000;
    const perArgs = (fn: () => unknown) => async () => {
      const t = nowMs();
      for (let i = 0; i < argsRounds; i++) fn();
      return (nowMs() - t) / argsRounds;
    };
    const argCalls = await alternate(rounds, {
      redact: perArgs(() => argsRedactor.redactArgs('find', smallArgs)),
      copy: perArgs(() => JSON.parse(JSON.stringify(smallArgs))),
    });
    const argsMs = median(argCalls.redact);
    const copyMs = median(argCalls.copy);

    const rows: Row[] = [
      {
        name: 'redact one envelope (windows list or failure), per envelope',
        budget: '<= 1.5x with 1 secret',
        measured: `${fmtMs(c1000)} with 1,000 secrets`,
        baseline: `${fmtMs(c1)} with 1 secret`,
        ratio: round(c1000 / c1, 3),
        holds: c1000 / c1 <= 1.5,
        notes: [
          `${rounds} rounds x ${perRound} x ${envs.length} envelopes per arm, arms alternated; each arm's fastest round (medians: ${fmtMs(median(calls.many))} vs ${fmtMs(median(calls.one))}). Secrets learned from arguments (16-24 chars each, every encoded form searched).`,
        ],
        data: {
          oneUs: calls.one.map((v) => round(v * 1000, 3)),
          manyUs: calls.many.map((v) => round(v * 1000, 3)),
        },
      },
      {
        name: 'scrub a 1 MiB string',
        budget: '<= 1.5x with 1 secret',
        measured: `${fmtMs(t1000)} with 1,000 secrets`,
        baseline: `${fmtMs(t1)} with 1 secret`,
        ratio: round(t1000 / t1, 3),
        holds: t1000 / t1 <= 1.5,
        notes: [
          `One pass of each automaton over the string, plus the inline scans (assignments, URLs, token formats). ${rounds} rounds per arm, each arm's fastest (medians: ${fmtMs(median(texts.many))} vs ${fmtMs(median(texts.one))}).`,
        ],
        data: { oneMs: texts.one.map((v) => round(v, 3)), manyMs: texts.many.map((v) => round(v, 3)) },
      },
      {
        name: 'redact one envelope, 1,000 random base64url secrets, per envelope',
        budget: '<= 1.5x with 1 secret',
        measured: `${fmtMs(cRandom)} with 1,000 random secrets`,
        baseline: `${fmtMs(c1)} with 1 secret`,
        ratio: round(cRandom / c1, 3),
        holds: cRandom / c1 <= 1.5,
        notes: [
          "The same envelopes; each secret 20 random base64url characters (no shared prefix), a fresh set each run. Ordinary text keeps the state within the secrets' first 2-3 units: those nodes have dense rows, so a step costs what a step from the root costs with one secret (before: 1.4x-1.84x, and 2.15x while learned values waited in the small automaton).",
        ],
        data: { randomUs: calls.random.map((v) => round(v * 1000, 3)) },
      },
      {
        name: 'scrub a 1 MiB string, 1,000 random base64url secrets',
        budget: '<= 1.5x with 1 secret',
        measured: `${fmtMs(tRandom)} with 1,000 random secrets`,
        baseline: `${fmtMs(t1)} with 1 secret`,
        ratio: round(tRandom / t1, 3),
        holds: tRandom / t1 <= 1.5,
        notes: [
          'Random secrets give the automaton nodes with many children: those get dense rows over the alphabet (one array read per step). Before: 7.8x.',
        ],
        data: { randomMs: texts.random.map((v) => round(v, 3)) },
      },
      {
        name: 'a new password in the arguments of every call, 1,000 remembered',
        budget: 'none (reported)',
        measured: `${fmtMs(learnMs)} per call (worst ${fmtMs(learnWorst)})`,
        baseline: `${fmtMs(c1000)} per envelope without`,
        ratio: round(learnMs / c1000, 3),
        holds: null,
        notes: [
          `${learnRounds} calls; a learned secret goes into a small automaton of recent values, folded into the big one (a rebuild) once the text scanned with it pending cost about one rebuild, or once 32 accumulate (before: a rebuild on every new secret, 4.8 s for 500 calls). The rebuild runs in ~1 ms steps (later turns of the event loop; this loop yields none, so the scan after each learned value runs one step): before, the worst call was a whole rebuild (12-25 ms).`,
        ],
        data: { learnMs: round(learnMs, 4), worstMs: round(learnWorst, 3) },
      },
      {
        name: 'a new token=... value in server output on every call',
        budget: 'none (reported)',
        measured: `${fmtMs(floodMs)} per call`,
        baseline: `${fmtMs(c1000)} per envelope without`,
        ratio: round(floodMs / c1000, 3),
        holds: null,
        notes: [
          `${floodRounds} calls; new server-output values go into a small automaton of recent values until 32 accumulate, then that pool's automaton (at most 256 values) is rebuilt; the 1,000 argument secrets are never evicted or rebuilt.`,
        ],
        data: { floodMs: round(floodMs, 4) },
      },
      {
        name: 'one envelope of 1,000 strings, each teaching a new token=... value',
        budget: 'none (reported)',
        measured: fmtMs(burstMs),
        baseline: `${fmtMs(c1000)} per ordinary envelope`,
        ratio: null,
        holds: null,
        notes: [
          'The automata are frozen while one value is walked and rebuilt once after it; the value is then copied again knowing every secret it taught.',
        ],
        data: { burstMs: round(burstMs, 3) },
      },
      {
        name: 'redactArgs of a small call (selector, sessionId, timeoutMs), per call',
        budget: 'none (reported; the design budget is a few microseconds)',
        measured: fmtMs(argsMs),
        baseline: `${fmtMs(copyMs)} JSON copy of the same arguments`,
        ratio: round(argsMs / copyMs, 3),
        holds: null,
        notes: [
          `${rounds} rounds x ${argsRounds} calls per arm, arms alternated; medians. Was a test's absolute bound (< 50 us per call), moved here: speed is measured in bench/, not asserted in tests.`,
        ],
        data: { redactUs: round(argsMs * 1000, 3), copyUs: round(copyMs * 1000, 3) },
      },
    ];
    return { rows, notes: [] };
  },
};
