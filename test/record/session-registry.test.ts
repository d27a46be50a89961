/** The session registry on its own: lookup, routing a completed call, the connection's current session, real logs. */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { newCall, type RecordedCall } from '../../src/record/call.js';
import { AdvancingClock } from '../../src/record/clock.js';
import { FailureLedger } from '../../src/record/failure-ledger.js';
import { OPEN_RETRY_MS, SessionRegistry } from '../../src/record/session-registry.js';
import { CatalogTouches } from '../../src/store/catalog-touches.js';
import { LogPool } from '../../src/store/log-pool.js';
import { tempDir } from './helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function setup(sessionsDir = tempDir()) {
  dirs.push(sessionsDir);
  const clock = new AdvancingClock();
  const lines: string[] = [];
  const ledger = new FailureLedger({
    stderr: (l) => lines.push(l),
    scrubText: (t) => t,
    clock,
    commitRetryMs: 100,
  });
  const registry = new SessionRegistry({
    sessionsDir,
    defaultSessionId: 'defa017defa0',
    scenario: null,
    maxLogBytes: 1 << 20,
    maxArtifactBytes: 1 << 20,
    clock,
    logPool: new LogPool(4),
    faults: undefined,
    ledger,
    scrubText: (t) => t,
    observationTools: new Set(['find']),
    redact: (v) => v,
    maxObservationChars: 1 << 16,
    liveExport: null,
    catalogTouches: new CatalogTouches(sessionsDir, (l) => lines.push(l)),
  });
  return { sessionsDir, clock, lines, registry };
}

/** A call as the recorder starts it: filed in the session it names, or the default one. */
function started(registry: SessionRegistry, tool: string, named?: string): RecordedCall {
  const start = registry.startOf(named);
  const call = newCall({
    tool,
    args: named ? { sessionId: named } : {},
    rpcId: null,
    method: null,
    transport: 'wrap',
    startedAt: new Date(),
    namedSessionId: named,
    startSessionId: start.id,
    startVia: start.via,
    plainServer: false,
  });
  registry.obtain(start.id, start.via, call.startedAt).callStarted(call);
  return call;
}

describe('SessionRegistry', () => {
  it('files an unsafe id under a derived one, and finds it by either', () => {
    const { registry } = setup();
    const s = registry.obtain('../evil', 'argument', new Date());
    expect(s.id).toMatch(/^unsafe-[0-9a-f]{12}$/);
    expect(registry.find('../evil')).toBe(s);
    expect(registry.find(s.id)).toBe(s);
  });

  it('moves a session-start call out of the placeholder, which is let go, and learns the server default', () => {
    const { registry } = setup();
    const call = started(registry, 'session-start');
    expect(call.session!.id).toBe('defa017defa0');
    const { s } = registry.route(call, {
      ok: true,
      sessionId: 'srv-default',
      result: { sessionId: 'run-1' },
    });
    expect(s.id).toBe('run-1');
    expect(s.counts).toMatchObject({ calls: 1, pending: 1 });
    expect(registry.find('defa017defa0')).toBeUndefined();
    // A call naming no session lands where the server stamps it, and that id is its default from now on.
    const find = started(registry, 'find');
    expect(registry.route(find, { ok: true, sessionId: 'srv-default', result: {} }).s.id).toBe('srv-default');
    expect(registry.startOf(undefined)).toEqual({ id: 'srv-default', via: 'envelope' });
  });

  it('keeps a call refused as unknown-session in the connection current session', () => {
    const { registry } = setup();
    const first = started(registry, 'find', 'run-1');
    const { s } = registry.route(first, { ok: true, sessionId: 'run-1', result: {} });
    registry.attach(s);
    const lost = started(registry, 'find', 'nope');
    const env = {
      ok: false as const,
      sessionId: 'nope',
      error: { code: 'unknown-session', category: 'invalid-argument' as const, detail: 'no such session' },
    };
    expect(registry.route(lost, env).s).toBe(s);
    expect(registry.find('nope')).toBeUndefined();
  });

  it('opens a log on the first call, retries a failed open only after OPEN_RETRY_MS, and ends sessions', () => {
    const root = tempDir();
    const blocked = path.join(root, 'sessions');
    fs.writeFileSync(blocked, 'in the way');
    const { registry, clock, lines } = setup(blocked);
    dirs.push(root);
    const call = started(registry, 'find', 'run-1');
    const s = call.session!;
    expect(registry.logOf(s)).toBeNull();
    expect(lines).toEqual([expect.stringContaining('recording failed (open)')]);
    fs.rmSync(blocked);
    expect(registry.logOf(s)).toBeNull(); // not before the retry interval
    clock.advance(OPEN_RETRY_MS);
    const log = registry.logOf(s);
    expect(log).not.toBeNull();
    registry.endAll(new Date());
    expect(s.status).toBe('ended');
    log!.commit();
    registry.closeAll();
    expect(fs.existsSync(path.join(s.dir, 'session.sqlite'))).toBe(true);
  });
});
