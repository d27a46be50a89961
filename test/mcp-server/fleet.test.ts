/**
 * The MCP server over a generated fleet (bench/lib/fleet.ts), through the SDK client over Streamable HTTP
 * (the server started in-process by serveHttp): list_sessions pages through every session once, newest
 * first, and its filters agree with what was generated and with triage.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Fleet, generateFleet, SCENARIOS } from '../../bench/lib/fleet.js';
import { type EvidenceHttpServer, serveHttp } from '../../src/mcp-server/index.js';
import { scratchRoot } from '../catalog/helpers.js';
import { removeDir } from '../support/temp.js';
import { httpClient, schemaValidator } from './helpers.js';

const SESSIONS = 240;
const DAY_MS = 86_400_000;
const validate = schemaValidator();

let root: string;
let fleet: Fleet;
let server: EvidenceHttpServer;
let client: Client;
let close: () => Promise<void>;

interface Listing {
  id: string;
  dirName: string;
  scenario: string;
  verdict: string;
  startedAt: string;
  fingerprints: string[];
}
interface Page {
  total: number;
  sessions: Listing[];
  nextCursor: string | null;
  note: string | null;
}

async function tool(name: string, args: Record<string, unknown>, schema: string) {
  const res = (await client.callTool({ name, arguments: args })) as {
    isError?: boolean;
    structuredContent?: Record<string, unknown>;
    content: Array<{ text?: string }>;
  };
  expect(res.isError, res.content[0]?.text).toBeFalsy();
  expect(validate(schema, res.structuredContent)).toEqual([]);
  return res.structuredContent!;
}

async function everyPage(args: Record<string, unknown>): Promise<{ total: number; sessions: Listing[] }> {
  const sessions: Listing[] = [];
  let cursor: string | undefined;
  let total = -1;
  for (let i = 0; i < 100; i++) {
    const page = (await tool(
      'list_sessions',
      { ...args, ...(cursor ? { cursor } : {}) },
      'session-page',
    )) as unknown as Page;
    total = page.total;
    sessions.push(...page.sessions);
    if (page.nextCursor === null) {
      expect(page.note).toBeNull();
      break;
    }
    expect(page.note).toContain(page.nextCursor);
    cursor = page.nextCursor;
  }
  return { total, sessions };
}

beforeAll(async () => {
  root = scratchRoot();
  // triage's window ends now: the fleet started a day ago, whatever the clock says (CI shifts it a year).
  fleet = generateFleet(root, { sessions: SESSIONS, seed: 5, start: new Date(Date.now() - DAY_MS) });
  server = await serveHttp({ sessionsDir: root, host: '127.0.0.1', port: 0, log: () => {} });
  ({ client, close } = await httpClient(server.url));
}, 120_000);

afterAll(async () => {
  await close?.();
  await server?.close();
  removeDir(root);
});

describe('list_sessions over a fleet', () => {
  it('pages through every session once, newest first', async () => {
    const { total, sessions } = await everyPage({ limit: 100 });
    expect(total).toBe(SESSIONS);
    expect(sessions.map((s) => s.dirName)).toEqual(fleet.sessions.map((s) => s.dirName).reverse());
  });

  it('filters by verdict, scenario, since and fingerprint, consistently with the fleet and triage', async () => {
    const failed = await everyPage({ verdict: 'FAIL', limit: 100 });
    expect(failed.total).toBe(fleet.sessions.filter((s) => !s.passed).length);
    expect(failed.sessions.every((s) => s.verdict === 'FAIL')).toBe(true);

    const player = await everyPage({ scenario: SCENARIOS.player, limit: 50 });
    expect(player.total).toBe(fleet.sessions.filter((s) => s.scenario === SCENARIOS.player).length);

    const cut = fleet.sessions[SESSIONS - 40]!.startedAt;
    const recent = await everyPage({ since: cut });
    expect(recent.total).toBe(40);

    const triage = (await tool('triage', { maxGroups: 3 }, 'triage-page')) as {
      report: { groups: Array<{ fingerprint: string; sessions: number }> };
      omitted: { groups: number };
    };
    const top = triage.report.groups[0]!;
    const withIt = await everyPage({ fingerprint: top.fingerprint, limit: 100 });
    expect(withIt.total).toBe(top.sessions);
    expect(withIt.sessions.every((s) => s.fingerprints.includes(top.fingerprint))).toBe(true);
  });

  it('summarizes and diffs a fleet session within its bounds', async () => {
    const failing = fleet.sessions.filter((s) => !s.passed).at(-1)!;
    const facts = await tool('get_summary', { session: failing.sessionId, maxChars: 500 }, 'summary');
    expect(facts.verdict).toBe('FAIL');
    expect((facts.markdown as string).length).toBeLessThanOrEqual(500 + 40);
    expect(facts.note).toMatch(/markdown: first 500/);
    const res = (await client.callTool({
      name: 'diff',
      arguments: { session: failing.sessionId, around: 1 },
    })) as {
      isError?: boolean;
      structuredContent?: { window: { from: number; to: number }; around: unknown[] };
      content: Array<{ text?: string }>;
    };
    // A failed run of a scenario that also passed before has a last passing run; one that never did, a tool error.
    if (res.isError) expect(res.content[0]!.text).toMatch(/no passing run/);
    else {
      expect(validate('diff-window', res.structuredContent)).toEqual([]);
      expect(res.structuredContent!.around.length).toBeLessThanOrEqual(3);
    }
  });
});
