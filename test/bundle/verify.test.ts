import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { verifyBundle } from '../../src/bundle/verify.js';
import { unsafeName } from '../../src/bundle/zip-read.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { type RawEntry, rawZip, readZip, sha256, tempDir } from './helpers.js';

describe('verifyBundle', () => {
  let root: string;
  let good: string;
  let top: string;
  let entries: RawEntry[];
  let pngBase64: string;

  beforeAll(async () => {
    root = tempDir();
    const s = FixtureSession.create(root, { scenario: 'verify me' });
    s.call(calls.displays());
    const cap = await s.capture();
    s.call(calls.findSave());
    await s.blankCapture(cap.summary as unknown as Record<string, unknown>);
    s.end();
    s.close();
    top = s.dirName;
    good = (await buildBundle(s.dir)).bundle;
    entries = (await readZip(good)).map((e) => ({ name: e.name, data: e.data }));
    pngBase64 = entries.find((e) => String(e.name).endsWith('.png'))!.data.toString('base64');
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  /** Write a variant of the good bundle; `manifest` rewrites the manifest to match the files. */
  function variant(name: string, change: (list: RawEntry[]) => RawEntry[], manifest = false): string {
    let list = change(entries.map((e) => ({ ...e })));
    if (manifest) {
      const mName = `${top}/manifest.json`;
      const m = JSON.parse(list.find((e) => e.name === mName)!.data.toString('utf8'));
      m.files = list
        .filter((e) => e.name !== mName)
        .map((e) => ({
          path: String(e.name).slice(top.length + 1),
          bytes: e.data.length,
          sha256: sha256(e.data),
        }));
      list = list.map((e) => (e.name === mName ? { ...e, data: Buffer.from(JSON.stringify(m)) } : e));
    }
    const file = path.join(root, name);
    fs.writeFileSync(file, rawZip(list));
    return file;
  }

  const edit = (file: string, fn: (text: string) => string) => (list: RawEntry[]) =>
    list.map((e) =>
      e.name === `${top}/${file}` ? { ...e, data: Buffer.from(fn(e.data.toString('utf8'))) } : e,
    );

  it('accepts the bundle as built, and the same entries rewritten byte by byte', async () => {
    expect(await verifyBundle(good)).toMatchObject({ ok: true, problems: [] });
    expect(await verifyBundle(variant('same.zip', (l) => l))).toMatchObject({ ok: true, problems: [] });
  });

  it('rejects a tampered file (hash and size no longer match the manifest)', async () => {
    const res = await verifyBundle(
      variant(
        'tampered.zip',
        edit('session.json', (t) => t.replace('"FAIL"', '"PASS"')),
      ),
    );
    expect(res.ok).toBe(false);
    expect(res.problems).toEqual([
      expect.stringMatching(/^session\.json: sha256 does not match the manifest/),
    ]);
    const longer = await verifyBundle(
      variant(
        'longer.zip',
        edit('bug-report.md', (t) => `${t}!`),
      ),
    );
    expect(longer.problems.join('\n')).toMatch(/bug-report\.md: size \d+ but the manifest says \d+/);
  });

  it('refuses entries that would land outside the folder, without extracting anything', async () => {
    const hostile: Array<[string, RegExp]> = [
      [`${top}/../evil.txt`, /path traversal/],
      ['../../evil.txt', /path traversal/],
      ['/etc/evil.txt', /absolute path/],
      ['C:/evil.txt', /absolute path/],
      [`${top}\\..\\evil.txt`, /backslash/],
    ];
    for (const [name, why] of hostile) {
      const file = variant(`hostile-${sha256(name).slice(0, 8)}.zip`, (l) => [
        ...l,
        { name, data: Buffer.from('pwned') },
      ]);
      const res = await verifyBundle(file);
      expect(res.ok, name).toBe(false);
      expect(res.problems.join('\n'), name).toMatch(why);
    }
    expect(fs.existsSync(path.join(root, 'evil.txt'))).toBe(false);
    expect(fs.existsSync(path.join(path.dirname(root), 'evil.txt'))).toBe(false);
  });

  it('refuses a symbolic link entry', async () => {
    const file = variant('link.zip', (l) => [
      ...l,
      { name: `${top}/artifacts/link.png`, data: Buffer.from('/etc/passwd'), mode: 0o120777 },
    ]);
    const res = await verifyBundle(file);
    expect(res.problems.join('\n')).toMatch(/artifacts\/link\.png.*symbolic link/);
  });

  it('reports missing required files, files not in the manifest, and a second top folder', async () => {
    const missing = await verifyBundle(
      variant('missing.zip', (l) => l.filter((e) => e.name !== `${top}/bug-report.md`), true),
    );
    expect(missing.problems).toEqual(['missing bug-report.md']);
    const extra = await verifyBundle(
      variant('extra.zip', (l) => [...l, { name: `${top}/notes.txt`, data: Buffer.from('hi') }]),
    );
    expect(extra.problems).toEqual(['notes.txt is not in the manifest']);
    const twoTops = await verifyBundle(
      variant('two.zip', (l) => [...l, { name: 'other/notes.txt', data: Buffer.from('hi') }]),
    );
    expect(twoTops.problems.join('\n')).toMatch(/expected one top folder, found 2/);
  });

  it('finds image bytes in JSON, JSONL and Markdown files, even when the manifest matches', async () => {
    const inJson = await verifyBundle(
      variant(
        'img-json.zip',
        edit('environment.json', (t) => t.replace('"dotnet": null', `"dotnet": {"base64": "${pngBase64}"}`)),
        true,
      ),
    );
    expect(inJson.problems).toEqual([
      expect.stringMatching(/^.*environment\.json: holds inline image bytes/),
    ]);
    const escaped = JSON.stringify(JSON.stringify({ data: { base64: pngBase64 } }))
      .split('+')
      .join('\\\\u002B');
    const inJsonl = await verifyBundle(
      variant(
        'img-jsonl.zip',
        edit('tool-calls.jsonl', (t) => `${t}{"ts":"x","payload":{"output":${escaped}}}\n`),
        true,
      ),
    );
    expect(inJsonl.problems.join('\n')).toMatch(/tool-calls\.jsonl: line \d+ holds inline image bytes/);
    const inMd = await verifyBundle(
      variant(
        'img-md.zip',
        edit('failure-summary.md', (t) => `${t}\n![x](data:image/png;base64,${pngBase64})\n`),
        true,
      ),
    );
    expect(inMd.problems.join('\n')).toMatch(/failure-summary\.md: holds base64 image bytes/);
  });

  it('does not mistake long words, ids or hashes for image bytes', async () => {
    const res = await verifyBundle(
      variant(
        'words.zip',
        (l) =>
          edit(
            'failure-summary.md',
            (t) => `${t}\n${'A'.repeat(4000)} ${'ab'.repeat(32)}\n`,
          )(
            edit('tool-calls.jsonl', (t) => `${t}{"ts":"x","payload":{"note":"${'x'.repeat(20_000)}"}}\n`)(l),
          ),
        true,
      ),
    );
    expect(res).toMatchObject({ ok: true, problems: [] });
  });

  it('reports a CRC that does not match the data', async () => {
    const res = await verifyBundle(
      variant('crc.zip', (l) => l.map((e) => (e.name === `${top}/session.json` ? { ...e, crc: 1234 } : e))),
    );
    expect(res.problems).toEqual([`${top}/session.json: CRC-32 does not match the data`]);
  });

  it('says so for a file that is not a zip, or is missing', async () => {
    const notZip = path.join(root, 'not.zip');
    fs.writeFileSync(notZip, 'hello');
    expect((await verifyBundle(notZip)).problems[0]).toMatch(/not a readable zip/);
    expect((await verifyBundle(path.join(root, 'nope.zip'))).problems[0]).toMatch(/not a readable zip/);
  });
});

describe('unsafeName', () => {
  it('accepts bundle paths and refuses the rest', () => {
    expect(unsafeName('20261202-101500-abc/artifacts/capture-1.png')).toBeNull();
    expect(unsafeName('a/b/')).toBeNull();
    for (const bad of ['', '..', 'a/../b', '/a', 'C:x', 'a\\b', 'a//b', './a', 'a\0b']) {
      expect(unsafeName(bad), JSON.stringify(bad)).not.toBeNull();
    }
  });

  it('refuses every name Windows would make another name or no file, in any segment', () => {
    const top = '20261202-101500-abc';
    for (const ok of [
      'capture-20261202-101500123-1.png',
      'consent.png',
      'nullable.png',
      'com10.png',
      'ab~1.html',
      'capture~1.png',
      'é.png',
    ])
      expect(unsafeName(`${top}/artifacts/${ok}`), ok).toBeNull();
    const refused: Array<[string, RegExp]> = [
      [
        `${top}/report.html:evil`,
        /file name "report\.html:evil" holds a ":" \(on Windows it names an alternate data stream/,
      ],
      [`${top}/artifacts/a.png:Zone.Identifier:$DATA`, /alternate data stream/],
      ...[
        'CON',
        'prn',
        'Aux',
        'NUL',
        'nul.png',
        'NUL.tar.gz',
        'CON .txt',
        'COM0',
        'com1.png',
        'COM9',
        'LPT1',
        'lpt9.txt',
        'COM¹',
        'com².png',
        'LPT³',
        'CONIN$',
        'conout$.log',
      ].map((n): [string, RegExp] => [`${top}/artifacts/${n}`, /is a Windows device name/]),
      [`${top}/a.png.`, /file name "a\.png\." ends with a dot or a space/],
      [`${top}/a.png `, /ends with a dot or a space/],
      [`${top}/artifacts./a.png`, /folder name "artifacts\." ends with a dot or a space/],
      [`${top}/nul/`, /folder name "nul" is a Windows device name/],
      ...['<', '>', '"', '|', '?', '*'].map((c): [string, RegExp] => [
        `${top}/a${c}b.png`,
        /not allowed in a Windows file name/,
      ]),
      [`${top}/a\u0001b.png`, /holds a control character \(U\+0001\)/],
      [`${top}/a\u001fb.png`, /control character \(U\+001F\)/],
      [`${top}/artifacts/CAPTUR~1.PNG`, /Windows 8\.3 short name/],
      [`${top}/REPOR~12`, /Windows 8\.3 short name/],
      [`${top}/${'x'.repeat(256)}.png`, /longer than 255 characters/],
    ];
    for (const [name, why] of refused) expect(unsafeName(name), JSON.stringify(name)).toMatch(why);
  });
});
