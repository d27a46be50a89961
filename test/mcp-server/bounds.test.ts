/**
 * `mcec-bundle mcp` stays usable when the recordings are hostile or busy, through the SDK client against the
 * built server: answers bounded whatever a session recorded (a 2 MB scenario in three sessions), pages that
 * do not shift when a session is recorded between them, a running session said as `list` says it, report.html
 * listed only once written, bundles of one zip one at a time, and a bearer token over HTTP.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyBundle } from '../../src/index.js';
import { bundlesUnderWay, LIMITS, SessionsEvidence } from '../../src/mcp-server/evidence.js';
import { TOOLS } from '../../src/mcp-server/tools.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';
import { removeDir, tempDir } from '../support/temp.js';
import { httpClient, schemaValidator, startHttpServer, stdioClient, stopChild } from './helpers.js';

const OUTPUT_SCHEMA = Object.fromEntries(TOOLS.map((t) => [t.name, t.outputSchema]));
const validate = schemaValidator();
const START = new Date('2026-03-01T10:00:00.000Z');
/** The marker clipText ends a clipped string with. */
const CUT = /\.\.\. \[\d+ more chars cut\]$/;

interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const res = (await client.callTool({ name, arguments: args })) as ToolResult;
  if (!res.isError) expect(validate(OUTPUT_SCHEMA[name]!, res.structuredContent), name).toEqual([]);
  return res;
}

/** A session of one call (a failing one when `failed`), started `minutes` after START. */
function session(dir: string, id: string, minutes: number, o: { scenario?: string; failed?: boolean } = {}) {
  const s = FixtureSession.create(dir, {
    sessionId: id,
    startedAt: new Date(START.getTime() + minutes * 60_000),
    ...(o.scenario === undefined ? {} : { scenario: o.scenario }),
  });
  s.call(
    o.failed
      ? {
          tool: 'find',
          args: { name: 'Save' },
          status: 'failed',
          error: { code: 'element-not-found', category: 'not-found', detail: 'no Save button' },
        }
      : calls.findSave(),
  );
  return s;
}

/** A sessions dir `fill` writes, served by `mcec-bundle mcp` over stdio to one SDK client for the block. */
function servedSessions(prefix: string, fill: (dir: string) => void): { dir: string; client: Client } {
  const served = { dir: '', client: undefined as unknown as Client };
  let close: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    served.dir = tempDir(prefix);
    fill(served.dir);
    ({ client: served.client, close } = await stdioClient(served.dir));
  }, 60_000);
  afterAll(async () => {
    await close?.();
    removeDir(served.dir);
  });
  return served;
}

describe('a 2 MB scenario in three sessions', () => {
  const scenario = (i: number) => `${'Q'.repeat(2_000_000)}${i}`;
  const served = servedSessions('mcec-mcp-bounds-', (dir) => {
    for (let i = 0; i < 3; i++) {
      const s = session(dir, `b16b00000${i}00`, i, { scenario: scenario(i), failed: i === 2 });
      s.end();
      s.close();
    }
  });

  it('list_sessions clips each scenario with a marker, text and structured content alike, under the cap', async () => {
    const res = await call(served.client, 'list_sessions', { limit: 100 });
    expect(Buffer.byteLength(JSON.stringify(res))).toBeLessThan(LIMITS.answerBytes);
    const listed = res.structuredContent!.sessions as Array<{ id: string; scenario: string }>;
    const big = listed.filter((s) => s.id.startsWith('b16b00000') && s.id !== 'b16b00000900');
    expect(big).toHaveLength(3);
    for (const s of big) {
      expect(s.scenario.length).toBeLessThan(LIMITS.fieldChars + 40);
      expect(s.scenario).toMatch(CUT);
      expect(res.content[0]!.text).toContain(s.scenario); // the text shows the same clipped value
    }
    expect(res.structuredContent!.note).toMatch(/3 value\(s\) over 2000 chars clipped/);
  });

  it('resources/list, failure-summary.md, get_summary, triage and diff stay small too', async () => {
    const { resources } = await served.client.listResources();
    expect(JSON.stringify(resources).length).toBeLessThan(20_000);
    const first = resources.find((r) => r.name.includes('b16b00000000'))!;
    expect(first.description!.length).toBeLessThan(LIMITS.descriptionChars + 60);
    const md = await served.client.readResource({ uri: first.uri });
    expect(Buffer.byteLength(JSON.stringify(md))).toBeLessThan(LIMITS.answerBytes);
    expect((md.contents[0] as { text: string }).text.length).toBeLessThan(LIMITS.resourceBytes + 40);
    for (const [name, args] of [
      ['get_summary', { session: 'b16b00000200' }],
      ['get_call', { session: 'b16b00000200', seq: 1 }],
      ['triage', {}],
      ['diff', { session: 'b16b00000200', against: 'b16b00000100' }],
    ] as const) {
      const res = await call(served.client, name, args);
      expect(res.isError, `${name}: ${res.content[0]?.text}`).toBeFalsy();
      expect(Buffer.byteLength(JSON.stringify(res)), name).toBeLessThan(200_000);
    }
  });
});

describe('paging, running sessions, report.html, bundles', () => {
  const served = servedSessions('mcec-mcp-paging-', (dir) => {
    for (let i = 0; i < 3; i++) {
      const s = session(dir, `a9e000000${i}00`, i);
      s.end({ passed: true });
      s.close();
    }
  });

  it('a session recorded between two pages neither repeats nor hides one (a keyset cursor)', async () => {
    const first = await call(served.client, 'list_sessions', { limit: 2 });
    const page1 = (first.structuredContent!.sessions as Array<{ id: string }>).map((s) => s.id);
    expect(page1).toEqual(['a9e000000200', 'a9e000000100']);
    const newer = session(served.dir, 'a9e000000900', 30);
    newer.end({ passed: true });
    newer.close();
    const second = await call(served.client, 'list_sessions', {
      limit: 2,
      cursor: first.structuredContent!.nextCursor as string,
    });
    expect((second.structuredContent!.sessions as Array<{ id: string }>).map((s) => s.id)).toEqual([
      'a9e000000000',
    ]);
    expect(second.structuredContent).toMatchObject({ total: 4, offset: 3, nextCursor: null });
    const bad = await call(served.client, 'list_sessions', { cursor: '2' });
    expect(bad.isError).toBe(true);
    expect(bad.content[0]!.text).toMatch(/not one this server gave/);
  });

  it('a running session with a failure reads FAIL (running), as in list', async () => {
    const running = session(served.dir, 'a9e000000500', 20, { failed: true }); // open, its writer this process
    try {
      const res = await call(served.client, 'list_sessions', {});
      expect(res.content[0]!.text).toMatch(/a9e000000500 .* FAIL \(running\) {2}1 calls, 1 failures/);
      const cli = await runNode([BUNDLE_CLI, 'list', '--sessions', served.dir]);
      expect(cli.stdout).toMatch(/a9e000000500 .*FAIL \(running\)/);
    } finally {
      running.end({ passed: true });
      running.close();
    }
  });

  it('lists report.html only once written; its error names a step that writes it; bundle does', async () => {
    const id = 'a9e000000100';
    const dirName = fs.readdirSync(served.dir).find((n) => n.endsWith(id))!;
    const uri = `mcec-session://${dirName}/report.html`;
    const listed = async () => (await served.client.listResources()).resources.map((r) => r.uri);
    expect(await listed()).not.toContain(uri);
    expect(await listed()).toContain(`mcec-session://${dirName}/failure-summary.md`);
    await expect(served.client.readResource({ uri })).rejects.toThrow(/call the bundle tool on a9e000000100/);
    const bundle = await call(served.client, 'bundle', { session: id });
    expect(bundle.structuredContent!.reportHtml).toBe(path.join(served.dir, dirName, 'report.html'));
    expect(await listed()).toContain(uri);
    const html = await served.client.readResource({ uri });
    expect((html.contents[0] as { text: string }).text).toContain('<html');
  });

  it('an images:false bundle that replaces one with images says so', async () => {
    const s = FixtureSession.create(served.dir, {
      sessionId: 'a9e000000700',
      startedAt: new Date(START.getTime() + 7 * 60_000),
    });
    const seq = s.call({ tool: 'capture', args: { window: 'Notepad' }, result: { ok: true } });
    s.artifactRow(seq, 'capture', s.storePng(await pngOf(40, 30)));
    s.end({ passed: true });
    s.close();
    const full = await call(served.client, 'bundle', { session: 'a9e000000700' });
    expect(full.structuredContent!.warnings).toEqual([]);
    const small = await call(served.client, 'bundle', { session: 'a9e000000700', images: false });
    const warnings = small.structuredContent!.warnings as string[];
    expect(warnings.join('\n')).toMatch(
      /replaced the earlier bundle at .*, which held 1 image\(s\), with this one holding 0/,
    );
    expect((await verifyBundle(small.structuredContent!.bundle as string)).ok).toBe(true);
  });
});

async function pngOf(width: number, height: number): Promise<Buffer> {
  const { default: sharp } = await import('sharp');
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 40 } } })
    .png()
    .toBuffer();
}

describe('over HTTP', () => {
  let dir: string;
  let server: { url: string; child: ChildProcess } | undefined;
  const TOKEN = 'tok-4f8e1c-bounds-secret';

  beforeAll(() => {
    dir = tempDir('mcec-mcp-http-');
    for (let i = 0; i < 2; i++) {
      const s = session(dir, `c0ffee000${i}00`, i);
      s.end({ passed: true });
      s.close();
    }
  });
  afterAll(async () => {
    if (server) await stopChild(server.child);
    removeDir(dir);
  });

  function post(url: string, headers: Record<string, string>, body: string) {
    const u = new URL(url);
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        const req = http.request(
          {
            host: u.hostname,
            port: u.port,
            path: u.pathname,
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              ...headers,
            },
          },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (s: string) => {
              text += s;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
          },
        );
        req.on('error', reject);
        req.end(body);
      },
    );
  }

  it('with a token (from the environment): 401 and WWW-Authenticate without it, never printed, the SDK client with it', async () => {
    const stderr: string[] = [];
    server = await startHttpServer(dir, [], { MCEC_MCP_TOKEN: TOKEN }, stderr);
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    for (const auth of [undefined, 'Bearer wrong', `Basic ${TOKEN}`, `Bearer ${TOKEN}x`]) {
      const res = await post(server.url, auth ? { authorization: auth } : {}, list);
      expect(res.status, String(auth)).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^Bearer /);
      expect(JSON.parse(res.body).error.code).toBe(-32600);
    }
    const client = new Client({ name: 'mcec-test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    try {
      const res = await call(client, 'list_sessions', {});
      expect(res.structuredContent!.total).toBe(2);
    } finally {
      await client.close();
    }
    const parse = await post(server.url, { authorization: `Bearer ${TOKEN}` }, '{"jsonrpc": "2.0", "id": 1,');
    expect(parse.status).toBe(400);
    expect(JSON.parse(parse.body).error.code).toBe(-32700);
    await stopChild(server.child);
    server = undefined;
    expect(stderr.join('')).toMatch(/bearer token required/);
    expect(stderr.join('')).not.toContain(TOKEN);
  });

  it('a non-loopback host needs a token, or --unauthenticated and a loud warning', async () => {
    const refused = await runNode(
      [BUNDLE_CLI, 'mcp', '--sessions', dir, '--listen', '0.0.0.0:0', '--allow-remote'],
      {
        env: { MCEC_MCP_TOKEN: '' },
      },
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /--allow-remote needs a bearer token: --token <token> or \$MCEC_MCP_TOKEN/,
    );
    const stderr: string[] = [];
    const open = await startHttpServer(
      dir,
      ['--listen', '0.0.0.0:0', '--allow-remote', '--unauthenticated'],
      { MCEC_MCP_TOKEN: '' },
      stderr,
    );
    try {
      expect(stderr.join('')).toMatch(/WARNING: serving WITHOUT AUTHENTICATION/);
    } finally {
      await stopChild(open.child);
    }
    const stdio = await runNode([BUNDLE_CLI, 'mcp', '--sessions', dir, '--token', TOKEN]);
    expect(stdio.code).toBe(2);
    expect(stdio.stderr).toMatch(/--token is for --listen/);
  });

  it('bundle calls to one zip at once: each answer is a zip that verifies or a refusal naming the call under way', async () => {
    server = await startHttpServer(dir);
    const { client, close } = await httpClient(server.url);
    try {
      const answers = await Promise.all(
        [true, false, true, false].map((images) =>
          call(client, 'bundle', { session: 'c0ffee000100', images }),
        ),
      );
      const done = answers.filter((a) => !a.isError);
      expect(done.length).toBeGreaterThanOrEqual(1);
      for (const r of answers.filter((a) => a.isError))
        expect(r.content[0]!.text).toMatch(/is being written to .* by another call/);
      expect((await verifyBundle(done[0]!.structuredContent!.bundle as string)).ok).toBe(true);
    } finally {
      await close();
    }
  });
});

describe('a bundle of a zip another call is writing', () => {
  it('is refused with what to do, and the zip left alone', async () => {
    const dir = tempDir('mcec-mcp-lock-');
    try {
      const s = session(dir, 'dead10c00100', 0);
      s.end();
      s.close();
      const evidence = new SessionsEvidence(dir);
      const zip = path.join(dir, `${s.dirName}.zip`);
      bundlesUnderWay.add(zip); // as while another call writes it
      try {
        await expect(evidence.bundle({ session: 'dead10c00100' })).rejects.toThrow(
          /being written to .* by another call: wait for that call's answer/,
        );
        expect(fs.existsSync(zip)).toBe(false);
      } finally {
        bundlesUnderWay.delete(zip);
      }
      expect((await evidence.bundle({ session: 'dead10c00100' })).bundle).toBe(zip);
    } finally {
      removeDir(dir);
    }
  }, 30_000);
});

describe('a log with a damaged page', () => {
  it('is said with its file and what to do, by list_sessions, the tools and show alike', async () => {
    const dir = tempDir('mcec-mcp-damaged-');
    try {
      const s = session(dir, 'bad9a9e00100', 0);
      s.end();
      s.close();
      const log = path.join(s.dir, 'session.sqlite');
      const { default: Database } = await import('better-sqlite3');
      const db = new Database(log, { readonly: true });
      const { rootpage } = db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'session'").get() as {
        rootpage: number;
      };
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.close();
      const fd = fs.openSync(log, 'r+');
      try {
        fs.writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize); // a bad sector
      } finally {
        fs.closeSync(fd);
      }
      const said = `${log}: database disk image is malformed (SQLITE_CORRUPT): the log is damaged`;
      const { client, close } = await stdioClient(dir);
      try {
        const list = await call(client, 'list_sessions', {});
        expect(list.content[0]!.text).toContain(`UNREADABLE: ${said}`);
        expect(list.content[0]!.text).toContain('.recover');
        const summary = await call(client, 'get_summary', { session: s.dirName });
        expect(summary.isError).toBe(true);
        expect(summary.content[0]!.text).toContain(said);
      } finally {
        await close();
      }
      const show = await runNode([BUNDLE_CLI, 'show', s.dirName, '--sessions', dir]);
      expect(show.code).toBe(1);
      expect(show.stderr).toContain(said);
    } finally {
      removeDir(dir);
    }
  }, 30_000);
});

describe('an answer that would be over the cap', () => {
  it('is a tool error naming the argument that makes it smaller (a noisy image at maxWidth 1600)', async () => {
    const dir = tempDir('mcec-mcp-cap-');
    try {
      const s = FixtureSession.create(dir, { sessionId: 'b19b19000100', startedAt: START });
      const seq = s.call({ tool: 'capture', args: { window: 'Notepad' }, result: { ok: true } });
      // Noise does not compress: 1600x800 RGB is ~3.8 MB of PNG, ~5.1 MB as base64.
      const { default: sharp } = await import('sharp');
      const noise = Buffer.alloc(1600 * 800 * 3);
      let x = 0x2545f491;
      for (let i = 0; i < noise.length; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        noise[i] = x & 0xff;
      }
      const png = await sharp(noise, { raw: { width: 1600, height: 800, channels: 3 } })
        .png({ compressionLevel: 1 })
        .toBuffer();
      s.artifactRow(seq, 'capture', s.storePng(png));
      s.end();
      s.close();
      const { client, close } = await stdioClient(dir);
      try {
        const big = await call(client, 'get_image', { session: 'b19b19000100', seq, maxWidth: 1600 });
        expect(big.isError).toBe(true);
        expect(big.content[0]!.text).toMatch(
          new RegExp(
            `^the answer of get_image would be \\d+ bytes, over the ${LIMITS.answerBytes} .*: ask a smaller maxWidth$`,
          ),
        );
        const small = await call(client, 'get_image', { session: 'b19b19000100', seq, maxWidth: 400 });
        expect(small.isError).toBeFalsy();
        expect(small.structuredContent).toMatchObject({ width: 400, storedWidth: 1600 });
      } finally {
        await close();
      }
    } finally {
      removeDir(dir);
    }
  }, 30_000);
});

describe('a session copied within the sessions dir', () => {
  it('list_sessions names the dir of each copy in its text, as the list table does', async () => {
    const dir = tempDir('mcec-mcp-copies-');
    try {
      const s = session(dir, 'c0b1e5000001', 0, { failed: true });
      s.end({ passed: false });
      s.close();
      const own = fs.readdirSync(dir).find((n) => n.endsWith('c0b1e5000001'))!;
      fs.cpSync(path.join(dir, own), path.join(dir, `${own} (2)`), { recursive: true });
      const { client, close } = await stdioClient(dir);
      try {
        const res = await call(client, 'list_sessions', {});
        const text = res.content[0]!.text!;
        const rows = text.split('\n').filter((l) => l.startsWith('c0b1e5000001'));
        expect(rows).toHaveLength(2);
        expect(rows.some((l) => l.endsWith(`dir ${JSON.stringify(own)} (copies of one run)`))).toBe(true);
        expect(rows.some((l) => l.endsWith(`dir ${JSON.stringify(`${own} (2)`)} (copies of one run)`))).toBe(
          true,
        );
      } finally {
        await close();
      }
    } finally {
      removeDir(dir);
    }
  }, 30_000);
});
