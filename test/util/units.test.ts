import { describe, expect, it } from 'vitest';
import { isRecord } from '../../src/util/json.js';
import { formatBytes, groupThousands, parseByteSize } from '../../src/util/units.js';

describe('formatBytes: one format for every report and program', () => {
  it('prints B and KB whole, MB and GB with one decimal unless it is .0', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(14 * 1024 + 300)).toBe('14 KB');
    expect(formatBytes(1_300_000)).toBe('1.2 MB');
    expect(formatBytes(1.5 * 1024 ** 3)).toBe('1.5 GB');
    expect(formatBytes(null)).toBe('? B');
    expect(formatBytes(-1)).toBe('? B');
  });

  it('prints a size the CLIs read back as the same size (256MiB is "256 MB", not "256.0 MB")', () => {
    for (const text of ['256MiB', '64MB', '2GiB', '512KB']) {
      const bytes = parseByteSize(text)!;
      expect(parseByteSize(formatBytes(bytes))).toBe(bytes);
    }
    expect(formatBytes(parseByteSize('256MiB'))).toBe('256 MB');
  });
});

describe('groupThousands', () => {
  it('groups whole numbers by three as en-US does, without ICU', () => {
    for (const n of [0, 7, 999, 1000, 65_536, 1_234_567, 10_000_000, -4321]) {
      expect(groupThousands(n)).toBe(n.toLocaleString('en-US'));
    }
  });
});

describe('isRecord', () => {
  it('is true for plain objects only', () => {
    expect([{}, { a: 1 }, Object.create(null)].every(isRecord)).toBe(true);
    expect([null, [], 'x', 1, undefined].some(isRecord)).toBe(false);
  });
});
