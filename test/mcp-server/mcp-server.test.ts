/**
 * `mcec-bundle mcp` through the official SDK client, over stdio and Streamable HTTP, against sessions made by
 * the recorder and the demo: the four-call "why did it fail" exchange, every tool's structured content
 * against its schema file, images decoded by sharp at the asked width, no redacted secret in any answer,
 * hostile arguments answered as tool errors.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecorder, verifyBundle } from '../../src/index.js';
import { publishedSchema } from '../../src/mcp-server/schemas.js';
import { TOOLS } from '../../src/mcp-server/tools.js';
import { recordCaptureRun } from '../support/capture-run.js';
import { calls, FixtureSession } from '../support/fixture-session.js';
import { noiseRaw } from '../support/images.js';
import { answer, initialize, call as mcpCall } from '../support/mcp-messages.js';
import { removeDir, tempDir } from '../support/temp.js';
import {
  httpClient,
  recordDemoSessions,
  SECRET,
  schemaValidator,
  startHttpServer,
  stdioClient,
  stopChild,
} from './helpers.js';

const OUTPUT_SCHEMA = Object.fromEntries(TOOLS.map((t) => [t.name, t.outputSchema]));

let root: string;
let sessions: string;
let demo: Awaited<ReturnType<typeof recordDemoSessions>>;
let httpServer: { url: string; child: ChildProcess };
const validate = schemaValidator();
/** Every answer any test got, as JSON text: none may hold the secret. */
const answers: string[] = [];

beforeAll(async () => {
  root = tempDir('mcec-mcp-');
  sessions = path.join(root, 'sessions');
  demo = await recordDemoSessions(sessions);
  httpServer = await startHttpServer(sessions);
}, 120_000);

afterAll(async () => {
  if (httpServer) await stopChild(httpServer.child);
  for (const a of answers) expect(a.includes(SECRET), 'the secret in an answer').toBe(false);
  removeDir(root);
});

interface ToolResult {
  isError?: boolean;
  content: Array<{ type: string; text?: string; data?: string; mimeType?: string }>;
  structuredContent?: Record<string, unknown>;
}

/** Call a tool; a success's structured content must follow its schema file. */
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const res = (await client.callTool({ name, arguments: args })) as ToolResult;
  answers.push(JSON.stringify(res));
  if (!res.isError) expect(validate(OUTPUT_SCHEMA[name]!, res.structuredContent), name).toEqual([]);
  return res;
}

const transports: Array<[string, () => Promise<{ client: Client; close(): Promise<void> }>]> = [
  ['stdio', () => stdioClient(sessions)],
  ['Streamable HTTP', () => httpClient(httpServer.url)],
];

describe.each(transports)('over %s', (_name, connect) => {
  let client: Client;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ client, close } = await connect());
  });
  afterAll(async () => {
    await close?.();
  });

  it('lists seven tools, each with an input schema and the published schema file as output schema', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      ['bundle', 'diff', 'get_call', 'get_image', 'get_summary', 'list_sessions', 'triage'].sort(),
    );
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema).toEqual(publishedSchema(OUTPUT_SCHEMA[t.name]!));
      expect(t.description!.length).toBeGreaterThan(100);
      expect(JSON.stringify(t.outputSchema)).not.toContain('urn:mcec-recorder'); // self-contained
    }
  });

  it('answers "why did the last run fail?" in four calls: list_sessions, get_summary, get_image, diff', async () => {
    const list = await call(client, 'list_sessions', { verdict: 'FAIL', limit: 1 });
    const latest = (list.structuredContent!.sessions as Array<{ id: string; verdict: string }>)[0]!;
    expect(latest).toMatchObject({ id: demo.failId, verdict: 'FAIL' });

    const summary = await call(client, 'get_summary', { session: latest.id });
    const facts = summary.structuredContent! as {
      failingCall: { seq: number; tool: string; code: string };
      suspectImage: { seq: number; width: number };
      markdown: string;
    };
    expect(facts.failingCall).toMatchObject({ tool: 'capture', code: 'frame-all-black' });
    expect(facts.markdown).toContain('frame-all-black');
    expect(summary.content[0]!.text).toBe(facts.markdown);

    const image = await call(client, 'get_image', {
      session: latest.id,
      seq: facts.suspectImage.seq,
      maxWidth: 120,
    });
    const block = image.content.find((c) => c.type === 'image')!;
    expect(block.mimeType).toBe('image/png');
    const meta = await sharp(Buffer.from(block.data!, 'base64')).metadata();
    expect(meta).toMatchObject({ format: 'png', width: 120 });
    expect(image.structuredContent).toMatchObject({ width: 120, storedWidth: facts.suspectImage.width });

    const diff = await call(client, 'diff', { session: latest.id });
    const d = diff.structuredContent! as {
      diff: { a: { dirName: string }; b: { dirName: string }; firstDivergence: { index: number } | null };
      window: { from: number; to: number; total: number };
      around: Array<{ index: number }>;
    };
    expect(d.diff.a.dirName).toBe(path.basename(demo.passDir));
    expect(d.diff.b.dirName).toBe(path.basename(demo.failDir));
    expect(d.diff.firstDivergence).not.toBeNull();
    expect(d.around.map((p) => p.index)).toContain(d.diff.firstDivergence!.index);
    expect(d.around.length).toBeLessThanOrEqual(7);
  });

  it('get_call gives the stored, redacted form of a call that carried a secret', async () => {
    const pass = path.basename(demo.passDir);
    const list = await call(client, 'list_sessions', { verdict: 'PASS' });
    expect((list.structuredContent!.sessions as Array<{ dirName: string }>).map((s) => s.dirName)).toEqual([
      pass,
    ]);
    let found = false;
    for (let seq = 1; seq <= 8; seq++) {
      const res = await call(client, 'get_call', { session: pass, seq });
      const c = res.structuredContent as { tool: string; args: Record<string, unknown> } | undefined;
      if (c?.tool !== 'send_command') continue;
      found = true;
      expect(c.args.apiToken).toBe('[redacted]');
      expect(JSON.stringify(c.args)).not.toContain(SECRET);
    }
    expect(found).toBe(true);
    const summary = await call(client, 'get_summary', { session: pass });
    expect(summary.structuredContent!.verdict).toBe('PASS');
  });

  it('get_call clips a large envelope to maxBytes and says so', async () => {
    const res = await call(client, 'get_call', { session: demo.failId, seq: 5, maxBytes: 1024 });
    const c = res.structuredContent! as { envelope: unknown; envelopeClipped: boolean; note: string | null };
    expect(c.envelopeClipped).toBe(true);
    expect(typeof c.envelope).toBe('string');
    expect((c.envelope as string).length).toBeLessThanOrEqual(1024 + 3);
    expect(c.note).toMatch(/envelope: first 1024/);
  });

  it('triage groups the failures; bundle writes a zip that verifies, inside the sessions dir', async () => {
    const triage = await call(client, 'triage', { maxGroups: 1 });
    const t = triage.structuredContent! as { report: { groups: unknown[] }; omitted: { groups: number } };
    expect(t.report.groups.length).toBe(1);
    const bundle = await call(client, 'bundle', { session: demo.failId });
    const zip = bundle.structuredContent!.bundle as string;
    expect(path.dirname(zip)).toBe(sessions);
    expect((await verifyBundle(zip)).ok).toBe(true);
  });

  it('serves failure-summary.md and report.html as resources', async () => {
    const { resources } = await client.listResources();
    const names = resources.map((r) => r.name);
    expect(names).toContain(`${path.basename(demo.failDir)}/failure-summary.md`);
    const md = await client.readResource({
      uri: `mcec-session://${path.basename(demo.failDir)}/failure-summary.md`,
    });
    answers.push(JSON.stringify(md));
    expect((md.contents[0] as { text: string }).text).toContain('frame-all-black');
    const html = await client.readResource({ uri: `mcec-session://${demo.failId}/report.html` });
    answers.push(JSON.stringify(html));
    expect(html.contents[0]!.mimeType).toBe('text/html');
    expect((html.contents[0] as { text: string }).text).toContain('<html');
    const templates = await client.listResourceTemplates();
    expect(templates.resourceTemplates).toHaveLength(2);
  });

  it('answers hostile arguments with tool errors, reads nothing outside the sessions dir, and keeps serving', async () => {
    const before = fs.readdirSync(root).sort();
    const hostile: Array<[string, Record<string, unknown>]> = [
      ['get_summary', { session: '..' }],
      ['get_summary', { session: '../../etc/passwd' }],
      ['get_summary', { session: '/etc/passwd' }],
      ['get_summary', { session: 'C:\\Windows\\win.ini' }],
      ['get_summary', { session: `${path.basename(demo.failDir)}/../..` }],
      ['get_summary', { session: 'ffffffffffff' }],
      ['get_summary', { session: '' }],
      ['get_summary', {}],
      ['get_call', { session: demo.failId, seq: 999_999 }],
      ['get_call', { session: demo.failId, seq: -1 }],
      ['get_call', { session: demo.failId, seq: '1; DROP TABLE calls' }],
      ['get_call', { session: demo.failId, seq: 1, maxBytes: 1e12 }],
      ['get_image', { session: demo.failId, seq: 1 }],
      ['get_image', { session: demo.failId, seq: 11, index: 7 }],
      ['get_image', { session: demo.failId, seq: 11, maxWidth: 100_000 }],
      ['list_sessions', { limit: 1_000_000_000 }],
      ['list_sessions', { limit: 0 }],
      ['list_sessions', { cursor: '../1' }],
      ['list_sessions', { since: 'yesterday; rm -rf /' }],
      ['list_sessions', { unknown: true }],
      ['triage', { maxGroups: 100_000 }],
      ['diff', { session: demo.failId, against: '..' }],
      ['diff', { session: demo.failId, against: demo.failId }],
      ['bundle', { session: '../sessions' }],
      ['bundle', { session: demo.failId, output: '/tmp/x.zip' }],
    ];
    for (const [name, args] of hostile) {
      const res = await call(client, name, args);
      expect(res.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(res.content[0]!.text!.length).toBeGreaterThan(0);
    }
    // The JSON-RPC error's message is the sentence alone: the client says "MCP error <code>:" once.
    await expect(client.callTool({ name: 'read_file', arguments: { path: '/etc/passwd' } })).rejects.toThrow(
      /^MCP error -32602: unknown tool "read_file"$/,
    );
    await expect(client.readResource({ uri: 'mcec-session://zzz0/failure-summary.md' })).rejects.toThrow(
      /^MCP error -32002: no session matching "zzz0"/,
    );
    for (const uri of [
      'mcec-session://../failure-summary.md',
      'mcec-session://%2e%2e/report.html',
      `mcec-session://${demo.failId}/../../catalog.sqlite`,
      'file:///etc/passwd',
    ]) {
      await expect(client.readResource({ uri }), uri).rejects.toThrow();
    }
    expect(fs.readdirSync(root).sort()).toEqual(before);
    // Still serving.
    const list = await call(client, 'list_sessions', {});
    expect(list.isError).toBeFalsy();
  });
});

describe('the HTTP front door', () => {
  function post(headers: Record<string, string>, pathName = '/mcp', method = 'POST'): Promise<number> {
    const url = new URL(httpServer.url);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: pathName,
          method,
          headers: { 'content-type': 'application/json', ...headers },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
    });
  }

  it('applies the proxies Host/Origin checks, serves only POST /mcp', async () => {
    const accept = { accept: 'application/json, text/event-stream' };
    expect(await post({ ...accept, host: 'evil.example' })).toBe(403);
    expect(await post({ ...accept, origin: 'http://evil.example' })).toBe(403);
    expect(await post({ ...accept, host: 'localhost:1' })).toBe(403);
    expect(await post(accept, '/other')).toBe(404);
    expect(await post(accept, '/mcp', 'GET')).toBe(405);
    expect(await post({ ...accept, origin: 'http://localhost:3000' })).toBe(200);
  });

  it('refuses a non-loopback listen host without --allow-remote', async () => {
    const { runNode } = await import('../support/programs.js');
    const { BUNDLE_CLI } = await import('../support/programs.js');
    const run = await runNode([BUNDLE_CLI, 'mcp', '--sessions', sessions, '--listen', '0.0.0.0:0']);
    expect(run.code).toBe(2); // bad usage, as for mcec-record http
    expect(run.stderr).toMatch(/non-loopback/);
  });
});

describe('a session whose log cannot be read', () => {
  it('list_sessions says so in its text as in its structured content', async () => {
    const dir = tempDir('mcec-mcp-unreadable-');
    try {
      const good = FixtureSession.create(dir, { sessionId: '900d00000001' });
      good.call(calls.findSave());
      good.end();
      good.close();
      const broken = path.join(dir, '20261201-120000-badbadbad001');
      fs.mkdirSync(broken);
      fs.writeFileSync(path.join(broken, 'session.sqlite'), 'not a database, copied half-way');
      const { client, close } = await stdioClient(dir);
      try {
        const list = await call(client, 'list_sessions', {});
        const sessionsListed = list.structuredContent!.sessions as Array<{ id: string; error?: string }>;
        const unreadable = sessionsListed.find((s) => s.id === 'badbadbad001')!;
        expect(unreadable.error).toMatch(/session\.sqlite/);
        const text = list.content[0]!.text!;
        expect(text).toContain(`badbadbad001  20261201-120000-badbadbad001  UNREADABLE: ${unreadable.error}`);
        expect(text).toMatch(/900d00000001 .* 1 calls, 0 failures/);
      } finally {
        await close();
      }
    } finally {
      removeDir(dir);
    }
  }, 60_000);
});

describe('the bundle tool on a session dir that is not what its log recorded', () => {
  it('names in its description and in its text each reason an image is left out', async () => {
    const description = TOOLS.find((t) => t.name === 'bundle')!.description;
    for (const reason of ['max-bytes', 'missing', 'mismatch', 'damaged'])
      expect(description).toContain(`(${reason})`);
    const dir = tempDir('mcec-mcp-bundle-');
    try {
      // Two captures of one size (uncompressed noise), swapped on disk after recording: only the sha256 tells.
      const png = (seed: number) =>
        sharp(noiseRaw(40, 30, seed), { raw: { width: 40, height: 30, channels: 3 } })
          .png({ compressionLevel: 0 })
          .toBuffer();
      const pngs = [await png(1), await png(2), await png(3)];
      const { sessionId, dir: sessionDir } = await recordCaptureRun(path.join(dir, 'sessions'), pngs);
      const files = fs.readdirSync(path.join(sessionDir, 'artifacts')).filter((f) => f.endsWith('.png'));
      const [a, b] = files.map((f) => path.join(sessionDir, 'artifacts', f));
      const bytesA = fs.readFileSync(a!);
      fs.writeFileSync(a!, fs.readFileSync(b!));
      fs.writeFileSync(b!, bytesA);
      fs.rmSync(path.join(sessionDir, 'artifacts', files[2]!));
      const { client, close } = await stdioClient(path.join(dir, 'sessions'));
      try {
        const res = await call(client, 'bundle', { session: sessionId });
        const dropped = res.structuredContent!.dropped as Array<{ path: string; reason: string }>;
        expect(dropped.map((d) => d.reason).sort()).toEqual(['mismatch', 'mismatch', 'missing']);
        const text = res.content[0]!.text!;
        expect(text).toContain(`Wrote ${res.structuredContent!.bundle as string} (`);
        for (const d of dropped) {
          const why =
            d.reason === 'missing'
              ? 'the session dir has no such file'
              : 'the file is not the one the log recorded (another size or sha256)';
          expect(text).toContain(`- ${d.path} (${d.reason}): ${why}`);
        }
        expect(text).toMatch(/Warning: 2 images are not the files the log recorded/);
        expect(JSON.parse(res.content[1]!.text!)).toEqual(res.structuredContent);
      } finally {
        await close();
      }
    } finally {
      removeDir(dir);
    }
  }, 60_000);
});

describe('get_call on a server that is not MCEC', () => {
  it("shows the server's answer as recorded (a plain result has no envelope to show), clipped to maxBytes", async () => {
    const dir = tempDir('mcec-mcp-plain-');
    try {
      const sessionsDir = path.join(dir, 'sessions');
      const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: () => {} });
      const [init, initAnswer] = initialize('acme/files');
      recorder.recordExchange(init, initAnswer, { transport: 'http' });
      const result = {
        content: [
          { type: 'text', text: `contents of x: ${'line\n'.repeat(400)}` },
          { type: 'resource_link', uri: 'file:///x', name: 'x' },
        ],
        structuredContent: { size: 2000 },
      };
      recorder.recordExchange(mcpCall(1, 'read', { path: 'x' }), answer(1, result), {
        transport: 'http',
        mcpSessionId: 'a1b2-c3',
      });
      await recorder.close();
      const { client, close } = await stdioClient(sessionsDir);
      try {
        const [listed] = (await call(client, 'list_sessions', {})).structuredContent!.sessions as Array<{
          id: string;
        }>;
        const whole = (await call(client, 'get_call', { session: listed!.id, seq: 1 })).structuredContent!;
        expect(whole).toMatchObject({ tool: 'read', status: 'ok', responseClipped: false });
        expect(whole.response).toEqual({ jsonrpc: '2.0', id: 1, result });
        const cut = (await call(client, 'get_call', { session: listed!.id, seq: 1, maxBytes: 1024 }))
          .structuredContent!;
        expect(cut.responseClipped).toBe(true);
        expect((cut.response as string).length).toBeLessThanOrEqual(1024 + 3);
        expect(cut.note).toMatch(/response: first 1024/);
      } finally {
        await close();
      }
    } finally {
      removeDir(dir);
    }
  }, 60_000);
});
