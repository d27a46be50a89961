import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CATEGORIES } from '../../src/contract/types.js';
import { RECOVERY_BY_CATEGORY, recoveryFor } from '../../src/report/recovery.js';
import { clip, compactValue, formatBytes, looksLikeImageBytes, oneLine } from '../../src/report/text.js';
import { formatDurationMs, loadTimeFormat } from '../../src/report/time.js';

describe('recovery steps (mcec-wire §7)', () => {
  it('has a step for every category of the closed set', () => {
    for (const category of ERROR_CATEGORIES)
      expect(recoveryFor(category), category).toBe(RECOVERY_BY_CATEGORY[category]);
    expect(Object.keys(RECOVERY_BY_CATEGORY).sort()).toEqual([...ERROR_CATEGORIES].sort());
  });

  it('says what the table says for the categories that differ most', () => {
    expect(recoveryFor('ambiguous-selector')).toContain('retrying unchanged cannot help');
    expect(recoveryFor('elevation')).toContain('the agent cannot recover');
    expect(recoveryFor('ocr-blank')).toContain('as capture-blank');
    expect(recoveryFor('internal', 'emergency-stopped')).toContain('stop and tell the user');
    expect(recoveryFor('no-such-category')).toBeNull();
    expect(recoveryFor('__proto__')).toBeNull();
    expect(recoveryFor(null)).toBeNull();
  });
});

describe('durations and times', () => {
  it.each([
    [0, '0 ms'],
    [0.4, '<1 ms'],
    [850, '850 ms'],
    [999.4, '999 ms'],
    [999.6, '1 s'],
    [2300, '2.3 s'],
    [5004, '5 s'],
    [59_940, '59.9 s'],
    [59_960, '1 min 0 s'],
    [64_000, '1 min 4 s'],
    [3_725_000, '1 h 2 min'],
    [90_000_000, '1 d 1 h'],
    [40 * 86_400_000, '40 d 0 h'],
    [null, ''],
  ])('%s ms reads %j', async (ms, expected) => {
    const time = await loadTimeFormat();
    expect(time.duration(ms)).toBe(expected);
    expect(formatDurationMs(ms)).toBe(expected);
  });

  it('reads a span across a DST change the same in every zone', async () => {
    const saved = process.env.TZ;
    const span = 120 * 86_400_000 + 5 * 3_600_000; // 120 d 5 h: crosses a DST change from 1970-01-01
    try {
      for (const tz of ['UTC', 'America/New_York', 'Europe/Berlin']) {
        process.env.TZ = tz;
        const time = await loadTimeFormat();
        expect(time.duration(span), tz).toBe('120 d 5 h');
      }
    } finally {
      process.env.TZ = saved;
    }
  });

  it('formats instants in UTC whatever TZ says, and keeps a non-time as given', async () => {
    const saved = process.env.TZ;
    try {
      process.env.TZ = 'Pacific/Kiritimati'; // UTC+14: the local date differs from the UTC one
      const time = await loadTimeFormat();
      expect(time.iso('2026-12-31T23:30:00.000Z')).toBe('2026-12-31T23:30:00.000Z');
      expect(time.iso('2026-12-31T20:30:00-05:00')).toBe('2027-01-01T01:30:00.000Z');
      expect(time.iso('not a time')).toBe('not a time');
      expect(time.between('2026-12-31T23:59:59.000Z', '2027-01-01T00:01:03.500Z')).toBe(64_500);
      expect(time.between(null, '2027-01-01T00:00:00Z')).toBeNull();
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});

describe('text helpers', () => {
  it('clips without splitting a surrogate pair', () => {
    expect(clip('abcdef', 4)).toBe('abc…');
    expect(clip('ab☕☕', 10)).toBe('ab☕☕');
    const emoji = 'ab😀cd';
    expect(clip(emoji, 4)).toBe('ab…');
  });

  it('makes one bounded line and never passes image bytes', () => {
    expect(oneLine('a\n\tb\r\n  c')).toBe('a b c');
    expect(oneLine('x'.repeat(10_000_000), 50)).toHaveLength(50);
    expect(oneLine(`iVBORw0KGgo${'A'.repeat(100)}`)).toMatch(/^\[image bytes omitted/);
    expect(looksLikeImageBytes(randomBytes(300).toString('base64'))).toBe(true);
    expect(looksLikeImageBytes('A'.repeat(300))).toBe(false);
    expect(looksLikeImageBytes('plain words '.repeat(30))).toBe(false);
  });

  it('compacts values: no bytes, no trees, bounded depth and width', () => {
    const value = compactValue({
      base64: 'AAAA',
      tree: [{ children: [] }, {}],
      deep: { a: { b: { c: { d: 1 } } } },
      list: [1, 2, 3, 4, 5, 6, 7],
      text: 'y'.repeat(500),
    }) as Record<string, unknown>;
    expect(value.base64).toBe('[4 chars omitted]');
    expect(value.tree).toBe('[2 nodes omitted]');
    expect(value.deep).toEqual({ a: { b: '{…}' } });
    expect(value.list).toEqual([1, 2, 3, 4, 5, '… 2 more']);
    expect((value.text as string).length).toBe(120);
    expect(formatBytes(14 * 1024 + 300)).toBe('14 KB');
    expect(formatBytes(1_300_000)).toBe('1.2 MB');
  });
});

describe('start-up cost', () => {
  it('imports handlebars, date-fns and sharp only lazily in the report and reader modules', () => {
    const files = [
      ...fs
        .readdirSync('src/report')
        .filter((f) => f.endsWith('.ts'))
        .map((f) => path.join('src/report', f)),
      'src/store/session-reader.ts',
    ];
    for (const file of files) {
      const source = fs.readFileSync(file, 'utf8');
      expect(source, file).not.toMatch(/^import\s+(?!type\b)[^;]*from\s+'(handlebars|date-fns|sharp)'/m);
    }
  });
});
