/**
 * How the CLIs take the export's endpoint and headers: a value that cannot be an OTLP/HTTP endpoint is bad
 * usage (exit 2, said without credentials), and --otlp-header applies however the export was turned on.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRecorder } from '../../src/record/index.js';
import { SAME_STOP_MS } from '../../src/util/stop-signal.js';
import { events, sessionDirs } from '../record/helpers.js';
import { exportScope } from '../support/export-scope.js';
import type { OtlpReceiver } from '../support/otlp-receiver.js';
import { BUNDLE_CLI, collectOutput, ROOT, runNode } from '../support/programs.js';
import { simOnHttp } from '../support/sim-http-proxy.js';
import { recordOneStdioCall } from '../support/stdio-record.js';

const RECORD_CLI = path.join(ROOT, 'dist/cli/mcec-record.js');
const SIM_CLI = path.join(ROOT, 'dist/cli/mcec-sim.js');

const { tempRoot, receiver, defer } = exportScope('mcec-otlp-cli-');

/** No OTEL_* variable of the developer's reaches a child unless the test sets it. */
function otelFree(env: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(process.env)) if (key.startsWith('OTEL_')) out[key] = '';
  return { ...out, ...env };
}

describe('a bad --otlp value', () => {
  it.each([
    ['notaurl', /--otlp "notaurl" is not a URL/],
    [
      'ftp://otuser:UrlPw-5551@collector/v1/traces',
      /--otlp "ftp:\/\/otuser:\*\*\*@collector\/v1\/traces" uses ftp:;/,
    ],
  ])(
    '%s is usage (exit 2) for mcec-record http and stdio, mcec-bundle export and the demo',
    async (value, message) => {
      const root = tempRoot();
      const runs = await Promise.all([
        runNode([RECORD_CLI, 'http', '--listen', '127.0.0.1:0', '--sessions', root, '--otlp', value], {
          env: otelFree(),
        }),
        runNode(
          [
            RECORD_CLI,
            'stdio',
            '--sessions',
            root,
            '--otlp',
            value,
            '--',
            process.execPath,
            SIM_CLI,
            '--stdio',
          ],
          {
            env: otelFree(),
          },
        ),
        runNode([BUNDLE_CLI, 'export', '--since', '1d', '--sessions', root, '--otlp', value], {
          env: otelFree(),
        }),
        runNode([path.join(ROOT, 'dist/cli/demo.js'), '--sessions', root, '--otlp', value], {
          env: otelFree(),
        }),
      ]);
      for (const run of runs) {
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(message);
        expect(run.stderr).not.toContain('UrlPw-5551');
      }
      // Nothing was recorded: the recorder never started.
      expect(sessionDirs(root)).toEqual([]);
    },
    30_000,
  );

  it('from OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is usage too, naming the variable', async () => {
    const run = await runNode([RECORD_CLI, 'http', '--listen', '127.0.0.1:0', '--sessions', tempRoot()], {
      env: otelFree({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' }),
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "collector:4318" uses collector:;/);
  });

  it('is a RangeError from createRecorder, naming the option', () => {
    expect(() => createRecorder({ sessionsDir: tempRoot(), otlp: { url: 'notaurl' } })).toThrow(
      /options\.otlp\.url "notaurl" is not a URL/,
    );
  });
});

describe('--otlp-header', () => {
  it('applies when OTEL_TRACES_EXPORTER=otlp turns the export on, beside OTEL_EXPORTER_OTLP_HEADERS', async () => {
    const r = await receiver();
    const sessions = path.join(tempRoot(), 'sessions');
    const run = await recordOneStdioCall(
      ['--sessions', sessions, '--otlp-header', 'x-api-key=HdrOnly-1', '--otlp-header', 'x-curl-key: Curl-3'],
      otelFree({
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: r.url,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-env-key=Env-2',
      }),
    );
    expect(run.code).toBe(0);
    expect(r.spans.length).toBeGreaterThan(0);
    for (const h of r.headers)
      expect(h).toMatchObject({ 'x-api-key': 'HdrOnly-1', 'x-curl-key': 'Curl-3', 'x-env-key': 'Env-2' });
  }, 30_000);

  it('a value that is no header is usage (exit 2), and is not echoed: it may be the secret itself', async () => {
    const runs = await Promise.all([
      runNode(
        [
          RECORD_CLI,
          'http',
          '--listen',
          '127.0.0.1:0',
          '--sessions',
          tempRoot(),
          '--otlp',
          'http://127.0.0.1:9/v1/traces',
          '--otlp-header',
          'Bearer Hdr-Secret-8',
        ],
        { env: otelFree() },
      ),
      runNode(
        [
          BUNDLE_CLI,
          'export',
          '--since',
          '1d',
          '--sessions',
          tempRoot(),
          '--otlp',
          'http://127.0.0.1:9/v1/traces',
          '-H',
          'Bearer Hdr-Secret-8',
        ],
        { env: otelFree() },
      ),
    ]);
    for (const run of runs) {
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/must be NAME=VALUE or "NAME: VALUE"/);
      expect(run.stderr + run.stdout).not.toContain('Hdr-Secret-8');
    }
  }, 30_000);

  it('without any export is usage (exit 2): it would apply to nothing', async () => {
    const run = await runNode(
      [
        RECORD_CLI,
        'http',
        '--listen',
        '127.0.0.1:0',
        '--sessions',
        tempRoot(),
        '--otlp-header',
        'x-api-key=k',
      ],
      { env: otelFree() },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--otlp-header needs an export/);
  });
});

describe('the export’s wait at close: 1 s for a stdio proxy’s recorder, else 5 s (--otlp-shutdown-timeout)', () => {
  /** A collector that answers every batch 2 s late: slower than a stdio recorder waits, faster than others. */
  async function slowReceiver(): Promise<OtlpReceiver> {
    const r = await receiver();
    r.answer = () => ({ status: 200, delayMs: 2000 });
    return r;
  }

  it('createRecorder: transport http (and wrap) waits for a collector 2 s late, stdio does not', async () => {
    const r = await slowReceiver();
    const exported: Record<string, unknown> = {};
    for (const transport of ['http', 'stdio'] as const) {
      const root = tempRoot();
      const recorder = await oneCallExported(root, transport, r.url);
      await recorder.close();
      const [e] = events(path.join(root, sessionDirs(root)[0]!), 'otlp-export');
      exported[transport] = e?.data.exported;
    }
    expect(exported).toEqual({ http: 2, stdio: 0 }); // the call's span and the session's root
  }, 30_000);

  it('close({ exportDeadline }) ends the wait then, though shutdownTimeoutMs is longer; the counts are still written', async () => {
    const r = await receiver();
    r.answer = () => ({ status: 200, delayMs: 60_000 });
    const root = tempRoot();
    const recorder = await oneCallExported(root, 'http', r.url);
    const t = Date.now();
    await recorder.close({ exportDeadline: t + 300 });
    expect(Date.now() - t).toBeLessThan(3000); // generous; without the deadline it waits 5 s
    const [e] = events(path.join(root, sessionDirs(root)[0]!), 'otlp-export');
    expect(e?.data).toMatchObject({ spans: 2, exported: 0, dropped: 2 });
  }, 30_000);

  /** A recorder (of `transport`) exporting to `url`, after one successful call: its close is what is tested. */
  async function oneCallExported(root: string, transport: 'http' | 'stdio', url: string) {
    const recorder = createRecorder({ sessionsDir: root, transport, otlp: { url }, stderr: () => {} });
    const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
      sessionId: 's1',
      ok: true,
      result: {},
    }));
    await call('windows', { sessionId: 's1' });
    return recorder;
  }

  /** The built `mcec-record http` in front of the simulator, exporting to `otlpUrl`, once it listens. */
  async function recordHttp(otlpUrl: string, extra: string[] = []) {
    const root = tempRoot();
    const { listener } = await simOnHttp(path.join(root, 'sim'));
    defer(() => listener.close());
    const sessions = path.join(root, 'sessions');
    const child = spawn(
      process.execPath,
      [
        RECORD_CLI,
        'http',
        '--listen',
        '127.0.0.1:0',
        '--target',
        listener.url,
        '--sessions',
        sessions,
        '--otlp',
        otlpUrl,
        ...extra,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...otelFree() } },
    );
    const output = collectOutput(child);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    );
    defer(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    for (let i = 0; i < 600 && !/recording (http:\S+)/.test(output.stderr); i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const proxyUrl = /recording (http:\S+)/.exec(output.stderr)![1]!;
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'displays', arguments: {} } };
    const res = await fetch(proxyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });
    await res.text();
    return { child, output, exited, sessions };
  }

  it('mcec-record http: Ctrl+C waits for a collector 2 s late, every span is delivered', async () => {
    const r = await slowReceiver();
    const { child, output, exited, sessions } = await recordHttp(r.url);
    child.kill('SIGINT');
    expect((await exited).code).toBe(0);
    expect(output.stderr).not.toContain('spans delivered'); // nothing was lost
    const [e] = events(path.join(sessions, sessionDirs(sessions)[0]!), 'otlp-export');
    expect(e?.data.exported).toBe(e?.data.spans);
    expect(e?.data.dropped).toBe(0);
  }, 30_000);

  it('mcec-record http: a second Ctrl+C while the close waits for the collector ends it by that signal at once', async () => {
    const r = await receiver();
    r.answer = () => ({ status: 200, delayMs: 60_000 });
    const { child, output, exited } = await recordHttp(r.url, ['--otlp-shutdown-timeout', '30s']);
    child.kill('SIGINT');
    child.kill('SIGINT'); // the same Ctrl+C delivered twice (the terminal's and npx's): one stop
    for (let i = 0; i < 500 && !output.stderr.includes('closing sessions'); i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(output.stderr).toContain('SIGINT: closing sessions (send it again to stop now');
    await new Promise((resolve) => setTimeout(resolve, SAME_STOP_MS + 200));
    expect(child.exitCode).toBe(null);
    const second = Date.now();
    child.kill('SIGINT');
    expect((await exited).signal).toBe('SIGINT');
    expect(Date.now() - second).toBeLessThan(10_000); // generous; the close had up to 30 s left
  }, 30_000);

  it('--otlp-shutdown-timeout that is not a duration, or without an export, is usage (exit 2)', async () => {
    const root = tempRoot();
    const [bad, alone] = await Promise.all([
      runNode(
        [
          RECORD_CLI,
          'http',
          '--listen',
          '127.0.0.1:0',
          '--sessions',
          root,
          '--otlp',
          'http://127.0.0.1:9/v1/traces',
          '--otlp-shutdown-timeout',
          '5',
        ],
        { env: otelFree() },
      ),
      runNode(
        [RECORD_CLI, 'http', '--listen', '127.0.0.1:0', '--sessions', root, '--otlp-shutdown-timeout', '5s'],
        {
          env: otelFree(),
        },
      ),
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--otlp-shutdown-timeout "5": expected a duration such as 1s/);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--otlp-shutdown-timeout needs an export/);
  });
});
