/**
 * The simulator on HTTP, a recording HTTP proxy (`startHttpProxy` with a real recorder), and the two together,
 * optionally with a tap in front of the simulator that keeps every body it gets (a small forwarding server:
 * the simulator itself stays unmodified).
 */
import http from 'node:http';
import path from 'node:path';
import { type HttpProxy, type HttpProxyOptions, startHttpProxy } from '../../src/proxy/http.js';
import { createRecorder, type Recorder } from '../../src/record/index.js';
import { createSimulator } from '../../src/sim/index.js';
import { post } from '../proxy/helpers.js';
import { FIXED_NOW, playScriptOverHttp, SIM_SEED, sessionIdFrom } from '../proxy/sim-script.js';

/** The simulator's PRNG seed (default SIM_SEED) and bearer token (none). */
export interface SimOptions {
  seed?: number;
  token?: string;
}

/** A simulator listening on HTTP. */
export interface SimOnHttp {
  sim: ReturnType<typeof createSimulator>;
  listener: Awaited<ReturnType<ReturnType<typeof createSimulator>['listenHttp']>>;
}

/** The simulator in this process: seed SIM_SEED unless given, clock FIXED_NOW, artifacts under `sessionsRoot`. */
export function simulatorAt(
  sessionsRoot: string,
  options: SimOptions = {},
): ReturnType<typeof createSimulator> {
  return createSimulator({
    seed: options.seed ?? SIM_SEED,
    now: () => new Date(FIXED_NOW),
    sessionsRoot,
    ...(options.token ? { token: options.token } : {}),
  });
}

/** {@link simulatorAt} on an ephemeral HTTP port (byte-identical answers run to run). */
export async function simOnHttp(sessionsRoot: string, options: SimOptions = {}): Promise<SimOnHttp> {
  const sim = simulatorAt(sessionsRoot, options);
  return { sim, listener: await sim.listenHttp({ port: 0 }) };
}

/** What the proxy is told beside where it listens, its target and its recorder. */
export type ProxyExtras = Omit<HttpProxyOptions, 'listen' | 'target' | 'recorder'>;

/** A recording HTTP proxy on an ephemeral loopback port. */
export interface RecordingHttpProxy {
  proxy: HttpProxy;
  recorder: Recorder;
  sessionsDir: string;
  /** What the recorder told its user (its stderr lines). */
  notices: string[];
  /** Close the proxy, then the recorder; a second call does nothing. */
  close(): Promise<void>;
}

/** A recorder (transport http) writing into `sessionsDir`, behind a proxy to `target`. */
export async function recordingHttpProxy(
  target: string,
  sessionsDir: string,
  extras: ProxyExtras = {},
): Promise<RecordingHttpProxy> {
  const notices: string[] = [];
  const recorder = createRecorder({ sessionsDir, transport: 'http', stderr: (line) => notices.push(line) });
  const proxy = await startHttpProxy({ listen: { host: '127.0.0.1', port: 0 }, target, recorder, ...extras });
  let closed: Promise<void> | undefined;
  return {
    proxy,
    recorder,
    sessionsDir,
    notices,
    close() {
      closed ??= proxy.close().then(() => recorder.close());
      return closed;
    },
  };
}

/** A recording of SCRIPT through the HTTP proxy: where it was written and the session the script opened. */
export interface ScriptRecording {
  sessionsDir: string;
  sessionId: string;
}

/**
 * SCRIPT played through a recording HTTP proxy in front of the simulator (bearer `token`), the recorder under
 * `<root>/proxied` and the simulator's artifacts under `<root>/sim`; everything is closed when it resolves.
 */
export async function scriptRecordedThroughHttpProxy(
  root: string,
  token = 'tok-1',
): Promise<ScriptRecording> {
  const { listener } = await simOnHttp(path.join(root, 'sim'), { token });
  const rig = await recordingHttpProxy(listener.url, path.join(root, 'proxied'));
  try {
    const answers = await playScriptOverHttp(rig.proxy.url, token);
    return { sessionsDir: rig.sessionsDir, sessionId: sessionIdFrom(answers[3]!.body.toString('utf8')) };
  } finally {
    await rig.close();
    await listener.close();
  }
}

export interface SimBehindHttpProxyOptions extends SimOptions {
  /** The recorder behind the proxy; default one writing into `<root>/recorded` (transport http). */
  recorder?: Recorder;
  /** Put the tap between the proxy and the simulator (it forwards bodies only, not the token). */
  tap?: boolean;
}

export interface SimWithProxy {
  /** The proxy's URL: where the agent's requests go. */
  url: string;
  /** The simulator itself (e.g. to latch its emergency stop). */
  sim: ReturnType<typeof createSimulator>;
  simUrl: string;
  recorder: Recorder;
  sessionsDir: string;
  /** With the tap: while true, it cuts every request's connection without an answer (the proxy answers 502). */
  cut: boolean;
  /** With the tap: every JSON-RPC body the simulator received, so a test can check what was (not) forwarded. */
  received: string[];
  /** Close the proxy, the recorder, the tap and the simulator's listener; a second call does nothing. */
  close(): Promise<void>;
}

/** The simulator (artifacts under `<root>/sim-sessions`) behind a recording HTTP proxy. */
export async function simBehindHttpProxy(
  root: string,
  options: SimBehindHttpProxyOptions = {},
): Promise<SimWithProxy> {
  const { sim, listener } = await simOnHttp(path.join(root, 'sim-sessions'), options);
  const received: string[] = [];
  const tap = options.tap
    ? http.createServer((req, res) => {
        if (rig.cut) {
          req.socket.destroy();
          return;
        }
        const parts: Buffer[] = [];
        req.on('data', (c: Buffer) => parts.push(c));
        req.on('end', async () => {
          const body = Buffer.concat(parts);
          received.push(body.toString('utf8'));
          const answer = await post(listener.url, body);
          res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/json' });
          res.end(answer.body);
        });
      })
    : null;
  if (tap) await new Promise<void>((resolve) => tap.listen(0, '127.0.0.1', resolve));
  const target = tap ? `http://127.0.0.1:${(tap.address() as { port: number }).port}/mcp` : listener.url;
  const sessionsDir = options.recorder?.sessionsDir ?? path.join(root, 'recorded');
  const recorder = options.recorder ?? createRecorder({ sessionsDir, transport: 'http' });
  const proxy = await startHttpProxy({ listen: { host: '127.0.0.1', port: 0 }, target, recorder });
  let closed: Promise<void> | undefined;
  const rig: SimWithProxy = {
    url: proxy.url,
    sim,
    simUrl: listener.url,
    recorder,
    sessionsDir,
    cut: false,
    received,
    close() {
      closed ??= (async () => {
        await proxy.close();
        await recorder.close();
        if (tap) await new Promise<void>((resolve) => tap.close(() => resolve()));
        await listener.close();
      })();
      return closed;
    },
  };
  return rig;
}
