/** Host-side evidence files: path resolution, finding them in envelopes, and copying real files (hostile ones too). */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactStore } from '../../src/artifacts/artifact-store.js';
import {
  findHostFiles,
  HostFileCollector,
  type HostFileRef,
  resolveHostPath,
} from '../../src/artifacts/host-files.js';
import { claimedSizePng, noisyPng, solidGif, solidPng } from '../support/images.js';
import { tempDir } from '../support/temp.js';

let tmp: string;
let hostRoot: string;
let sessionDir: string;

beforeEach(() => {
  tmp = tempDir('mcec-host-');
  hostRoot = path.join(tmp, 'mnt-mcec');
  sessionDir = path.join(tmp, 'session');
  fs.mkdirSync(path.join(hostRoot, '20261202-101500-5f19c9c01a3f'), { recursive: true });
  fs.mkdirSync(sessionDir);
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const MAP = () => [{ from: 'C:\\mcec\\sessions', to: hostRoot }];
const WIN_DIR = 'C:\\mcec\\sessions\\20261202-101500-5f19c9c01a3f';

/** Write `bytes` where the host path `name` (inside the session's host dir) maps to; returns the host path. */
function hostFile(name: string, bytes: Buffer | string): string {
  fs.writeFileSync(path.join(hostRoot, '20261202-101500-5f19c9c01a3f', name), bytes);
  return `${WIN_DIR}\\${name}`;
}

function store(maxArtifactBytes = 64 * 1024 * 1024): ArtifactStore {
  return new ArtifactStore({ sessionDir, maxArtifactBytes });
}

function gif(width: number, height: number): Promise<Buffer> {
  return solidGif(width, height, '#c81e1e');
}

/** A path-only capture envelope naming `hostPath`. */
function pathOnly(hostPath: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ok: true,
    sessionId: '5f19c9c01a3f',
    result: { handle: 65552, width: 64, height: 48, encoding: 'png', bytes: 1, artifact: hostPath, ...extra },
  };
}

async function collect(
  envelope: Record<string, unknown>,
  options: ConstructorParameters<typeof HostFileCollector>[0] = { pathMap: MAP() },
  s = store(),
  tool = 'capture',
) {
  const collector = new HostFileCollector(options);
  const refs = collector.find(envelope, tool);
  return { ...(await collector.collect(envelope, refs, s)), refs, store: s };
}

describe('resolveHostPath', () => {
  it('maps a win32 path through the longest matching entry, case-insensitively and with either separator', () => {
    const pathMap = [
      { from: 'C:\\mcec', to: '/mnt/other' },
      { from: 'c:/MCEC/Sessions/', to: '/mnt/mcec' },
    ];
    expect(resolveHostPath('C:\\mcec\\sessions\\a\\capture-1.png', { pathMap, platform: 'linux' })).toEqual({
      local: '/mnt/mcec/a/capture-1.png',
      root: '/mnt/mcec',
    });
    expect(resolveHostPath('C:/mcec/x.png', { pathMap, platform: 'linux' })).toEqual({
      local: '/mnt/other/x.png',
      root: '/mnt/other',
    });
    // A prefix must end at a separator: C:\mcecX is not under C:\mcec.
    expect(resolveHostPath('C:\\mcecX\\x.png', { pathMap, platform: 'linux' })).toHaveProperty('error');
  });

  it('reads a win32 path as is only on Windows, and a POSIX path as is only elsewhere', () => {
    expect(resolveHostPath('C:\\mcec\\x.png', { platform: 'win32' })).toEqual({ local: 'C:\\mcec\\x.png' });
    expect(resolveHostPath('C:\\mcec\\x.png', { platform: 'linux' })).toEqual({
      error: 'not readable from this machine: a Windows path with no --host-path-map entry for it',
    });
    expect(resolveHostPath('\\\\server\\share\\x.png', { platform: 'win32' })).toEqual({
      local: '\\\\server\\share\\x.png',
    });
    expect(resolveHostPath('/tmp/x.png', { platform: 'linux' })).toEqual({ local: '/tmp/x.png' });
    expect(resolveHostPath('/tmp/x.png', { platform: 'win32' })).toHaveProperty('error');
  });

  it('refuses .., device paths, device names, alternate data streams and NUL before touching the disk', () => {
    const o = { pathMap: MAP(), platform: 'win32' as const };
    for (const [p, why] of [
      [`${WIN_DIR}\\..\\..\\..\\Windows\\win.ini`, '".." or "."'],
      ['C:\\mcec\\sessions\\.\\x.png', '".." or "."'],
      ['/tmp/../etc/passwd', '".." or "."'],
      ['\\\\.\\PhysicalDrive0', 'device path'],
      ['\\\\?\\C:\\mcec\\x.png', 'device path'],
      ['C:\\mcec\\sessions\\NUL.png', 'device name'],
      ['C:\\mcec\\sessions\\com1', 'device name'],
      ['C:\\mcec\\sessions\\x.png:hidden', 'alternate data stream'],
      ['C:\\mcec\\x\0.png', 'NUL'],
    ]) {
      const r = resolveHostPath(p!, o);
      expect(r, p).toHaveProperty('error');
      expect((r as { error: string }).error, p).toContain(why);
    }
  });
});

describe('findHostFiles', () => {
  it('finds path-only captures, capture file, record GIFs and the server observation, each with its role', () => {
    const refs = findHostFiles(
      {
        ok: false,
        sessionId: 'a',
        error: {
          code: 'frame-all-black',
          category: 'capture-blank',
          partialResult: { width: 1, height: 1, artifact: 'C:\\m\\p.png' },
          lastObservation: { kind: 'capture-summary', artifact: 'C:\\m\\obs.png', file: 'D:\\out\\o.png' },
        },
      },
      'capture',
    );
    expect(refs.map((r) => [r.jsonPath, r.role, r.hostPath])).toEqual([
      ['/error/lastObservation/artifact', 'host-observation', 'C:\\m\\obs.png'],
      ['/error/lastObservation/file', 'host-observation', 'D:\\out\\o.png'],
      ['/error/partialResult/artifact', 'host-capture', 'C:\\m\\p.png'],
    ]);
    const rec = findHostFiles({ ok: true, result: { frames: 20, fps: 10, file: 'C:\\r\\x.gif' } }, 'record');
    expect(rec.map((r) => r.role)).toEqual(['host-recording']);
    const file = findHostFiles({ ok: true, result: { width: 2, file: '\\\\srv\\share\\c.png' } }, 'capture');
    expect(file.map((r) => r.role)).toEqual(['host-capture-file']);
  });

  it("ignores the recorder's own relative artifact paths, non-paths, and UIA trees", () => {
    expect(
      findHostFiles(
        {
          ok: true,
          result: {
            kind: 'capture-summary',
            artifact: 'artifacts/capture-1.png',
            file: 'relative\\x.png',
            tree: { children: [{ artifact: 'C:\\deep.png' }] },
            note: 'C:\\not-a-key.png',
          },
        },
        'capture',
      ),
    ).toEqual([]);
  });
});

describe('HostFileCollector: real files', () => {
  it('copies a path-only PNG through the map: header facts, a computed blankCheck, and the reference', async () => {
    const png = await noisyPng(64, 48);
    const host = hostFile('capture-20261202-101501123-1.png', png);
    const { value, files, store: s } = await collect(pathOnly(host));
    expect(files).toHaveLength(1);
    const f = files[0]!;
    expect(f).toMatchObject({ role: 'host-capture', hostPath: host, width: 64, height: 48, format: 'png' });
    expect(f.error).toBeUndefined();
    expect(f.blankCheck).toEqual({
      blank: false,
      dominantFraction: expect.any(Number),
      dominantIsDark: false,
    });
    expect(fs.readFileSync(s.absolutePath(f.path!))).toEqual(png);
    expect(f.path).toMatch(/^artifacts\/capture-\d{8}-\d{9}-1\.png$/);
    const result = (value as { result: Record<string, unknown> }).result;
    expect(result.artifact).toBe(host); // the original path is kept
    expect(result.artifactCopy).toBe(f.path);
  });

  it('keeps the declared blankCheck (no recomputation) and dedups with an inline copy of the same bytes', async () => {
    const png = await solidPng(40, 30, [0, 0, 0]);
    const s = store();
    const inline = await s.save(png);
    const declared = { blank: false, dominantFraction: 0.5, dominantIsDark: false }; // deliberately not the real one
    const host = hostFile('same.png', png);
    const { files } = await collect(pathOnly(host, { blankCheck: declared }), { pathMap: MAP() }, s);
    expect(files[0]).toMatchObject({ path: inline.path, sha256: inline.sha256, deduplicated: true });
    expect(files[0]!.blankCheck).not.toEqual({ blank: true, dominantFraction: 1, dominantIsDark: true });
    expect(fs.readdirSync(path.join(sessionDir, 'artifacts'))).toHaveLength(1);
  });

  it('keeps a record GIF as a GIF (named recording-*), with no blankCheck', async () => {
    const bytes = await gif(32, 24);
    const host = hostFile('rec.gif', bytes);
    const { files, store: s } = await collect(
      { ok: true, result: { frames: 1, durationMs: 100, fps: 10, width: 32, height: 24, file: host } },
      { pathMap: MAP() },
      store(),
      'record',
    );
    expect(files[0]).toMatchObject({ role: 'host-recording', format: 'gif', width: 32, height: 24 });
    expect(files[0]!.path).toMatch(/^artifacts\/recording-.*\.gif$/);
    expect(files[0]!.blankCheck).toBeUndefined();
    expect(fs.readFileSync(s.absolutePath(files[0]!.path!))).toEqual(bytes);
  });

  it('reads the same unchanged file once per session however often envelopes name it', async () => {
    const host = hostFile('obs.png', await noisyPng(16, 16));
    const collector = new HostFileCollector({ pathMap: MAP() });
    const s = store();
    const env = {
      ok: false,
      error: { code: 'x', category: 'internal', lastObservation: { artifact: host } },
    };
    const first = await collector.collect(env, collector.find(env, 'find'), s);
    const second = await collector.collect(env, collector.find(env, 'find'), s);
    expect(first.files[0]!.role).toBe('host-observation');
    expect(second.files[0]).toMatchObject({ path: first.files[0]!.path, deduplicated: true });
    expect(s.filesWritten).toBe(1);
  });

  it('says where the file lies when it is not readable here (no map, or a vanished file)', async () => {
    const host = hostFile('gone.png', await noisyPng(8, 8));
    const unmapped = await collect(pathOnly(host), { platform: 'linux' });
    expect(unmapped.files[0]).toMatchObject({
      hostPath: host,
      error: 'not readable from this machine: a Windows path with no --host-path-map entry for it',
    });
    expect((unmapped.value as { result: Record<string, unknown> }).result.artifactCopyError).toBe(
      unmapped.files[0]!.error,
    );
    fs.rmSync(path.join(hostRoot, '20261202-101500-5f19c9c01a3f', 'gone.png'));
    const vanished = await collect(pathOnly(host));
    expect(vanished.files[0]!.error).toBe('not found from this machine');
    expect(vanished.files[0]!.path).toBeUndefined();
  });

  it('copies nothing when switched off', async () => {
    const host = hostFile('x.png', await noisyPng(8, 8));
    const { refs, files } = await collect(pathOnly(host), { enabled: false, pathMap: MAP() });
    expect(refs).toEqual([]);
    expect(files).toEqual([]);
  });
});

describe('HostFileCollector: hostile files are refused and nothing is copied', () => {
  const dirOf = () => path.join(hostRoot, '20261202-101500-5f19c9c01a3f');

  async function refused(hostPath: string, options = { pathMap: MAP() }, s = store()): Promise<string> {
    const { files } = await collect(pathOnly(hostPath), options, s);
    expect(files).toHaveLength(1);
    expect(files[0]!.path, hostPath).toBeUndefined();
    expect(
      fs.existsSync(path.join(sessionDir, 'artifacts'))
        ? fs.readdirSync(path.join(sessionDir, 'artifacts'))
        : [],
    ).toEqual([]);
    return files[0]!.error!;
  }

  it('a symlink to /etc/passwd, and a symlink to a real PNG', async () => {
    fs.symlinkSync('/etc/passwd', path.join(dirOf(), 'passwd.png'));
    expect(await refused(`${WIN_DIR}\\passwd.png`)).toBe('refused: a symbolic link');
    fs.writeFileSync(path.join(tmp, 'outside.png'), await noisyPng(8, 8));
    fs.symlinkSync(path.join(tmp, 'outside.png'), path.join(dirOf(), 'link.png'));
    expect(await refused(`${WIN_DIR}\\link.png`)).toBe('refused: a symbolic link');
  });

  it('a directory link on the way out of the mapped folder', async () => {
    fs.mkdirSync(path.join(tmp, 'elsewhere'));
    fs.writeFileSync(path.join(tmp, 'elsewhere', 'x.png'), await noisyPng(8, 8));
    fs.symlinkSync(path.join(tmp, 'elsewhere'), path.join(dirOf(), 'sub'));
    expect(await refused(`${WIN_DIR}\\sub\\x.png`)).toBe('refused: resolves outside the mapped folder');
  });

  it('a directory, a device file and a FIFO', async () => {
    fs.mkdirSync(path.join(dirOf(), 'adir.png'));
    expect(await refused(`${WIN_DIR}\\adir.png`)).toBe('refused: a directory, not a file');
    expect(await refused('/dev/zero', { pathMap: [] })).toBe(
      'refused: not a regular file (a device, FIFO or socket)',
    );
    execFileSync('mkfifo', [path.join(dirOf(), 'pipe.png')]);
    expect(await refused(`${WIN_DIR}\\pipe.png`)).toBe(
      'refused: not a regular file (a device, FIFO or socket)',
    );
  });

  it('a 2 GB sparse file over the per-file limit (never read), and a file over the session budget', async () => {
    const big = path.join(dirOf(), 'big.png');
    const fd = fs.openSync(big, 'w');
    fs.writeSync(fd, await noisyPng(8, 8));
    fs.ftruncateSync(fd, 2 * 1024 * 1024 * 1024);
    fs.closeSync(fd);
    const before = process.memoryUsage().rss;
    expect(await refused(`${WIN_DIR}\\big.png`)).toBe(
      `refused: ${2 * 1024 * 1024 * 1024} bytes is over the per-file limit (${64 * 1024 * 1024} bytes)`,
    );
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    const png = await noisyPng(64, 64);
    expect(await refused(hostFile('budget.png', png), { pathMap: MAP() }, store(png.length - 1))).toMatch(
      /^over artifact budget/,
    );
  });

  it('a non-image, an empty file, a decompression bomb and a path with ..', async () => {
    expect(await refused(hostFile('notes.png', 'root:x:0:0:root:/root:/bin/bash\n'))).toBe(
      'refused: not a recognised image (unrecognised magic bytes)',
    );
    expect(await refused(hostFile('empty.png', Buffer.alloc(0)))).toBe('refused: an empty file');
    expect(await refused(hostFile('bomb.png', claimedSizePng(50_000, 50_000)))).toMatch(/^too many pixels/);
    expect(await refused(`${WIN_DIR}\\..\\..\\..\\..\\etc\\passwd`)).toContain('".." or "."');
  });

  it('a refusal never throws, whatever the ref holds', async () => {
    const collector = new HostFileCollector({ pathMap: MAP() });
    const ref: HostFileRef = {
      jsonPath: '/result/artifact',
      container: ['result'],
      key: 'artifact',
      hostPath: `${WIN_DIR}\\${'x'.repeat(300)}.png`,
      role: 'host-capture',
    };
    const out = await collector.collect({ ok: true, result: 5 }, [ref], store());
    expect(out.files[0]!.error).toBeDefined();
  });
});
