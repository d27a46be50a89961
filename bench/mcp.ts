/**
 * The MCP server's list_sessions over a generated fleet of 10,000 sessions, through the official SDK client
 * over stdio (`mcec-bundle mcp`): a round trip per call (request, catalog query, JSON, the client's check of
 * the structured content against the output schema), against the budget "well under a second".
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { generateFleet, SCENARIOS } from './lib/fleet.js';
import { timedRun } from './lib/spawn.js';
import { alternate, fmtMs, median, round } from './lib/stats.js';
import type { Figure, Row } from './lib/types.js';

function scratch(fallback: string): string {
  try {
    return fs.mkdtempSync(path.join('/dev/shm', 'mcec-bench-mcp-'));
  } catch {
    return fs.mkdtempSync(path.join(fallback, 'mcp-'));
  }
}

export const figure: Figure = {
  id: 'mcp',
  title: 'mcec-bundle mcp: list_sessions over 10,000 sessions, SDK client round trips over stdio',
  async run(ctx) {
    // A quick run checks the harness in seconds: a fleet of 200 is written and indexed fast even on a busy core.
    const big = ctx.quick ? 200 : 10_000;
    const rounds = ctx.quick ? 5 : 30;
    const root = scratch(ctx.tmp);
    try {
      const cli = path.join(ctx.root, 'dist', 'cli', 'mcec-bundle.js');
      const fleet = generateFleet(root, { sessions: big, seed: 3 });
      const index = await timedRun(process.execPath, [cli, 'index', '--sessions', root], { cwd: root });
      if (index.code !== 0) throw new Error(`index exited ${index.code}: ${index.stderr.slice(0, 300)}`);
      await new Promise((r) => setTimeout(r, 2500)); // the catalog trusts the dir's time once it is 2 s old
      // The first reader after index may still re-read logs (48 s for 10,000 here): a list takes that, untimed,
      // so the figure measures the server, not the catalog's catch-up (bench/list.ts reports that).
      await timedRun(process.execPath, [cli, 'list', '--sessions', root], { cwd: root });
      const client = new Client({ name: 'bench', version: '1' });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [cli, 'mcp', '--sessions', root],
          cwd: root,
        }),
      );
      try {
        const since = fleet.sessions[Math.floor(big / 2)]!.startedAt;
        const call = async (args: Record<string, unknown>) => {
          const t = performance.now();
          const res = await client.callTool({ name: 'list_sessions', arguments: args });
          if (res.isError) throw new Error(JSON.stringify(res.content).slice(0, 300));
          return performance.now() - t;
        };
        for (let i = 0; i < 3; i++) await call({});
        // The last page's cursor, walked to once: a keyset cursor names where the page before ended.
        let lastCursor: string | undefined;
        for (let cursor: string | undefined; ; ) {
          const res = await client.callTool({
            name: 'list_sessions',
            arguments: { limit: 100, ...(cursor === undefined ? {} : { cursor }) },
          });
          const next = (res.structuredContent as { nextCursor?: string | null } | undefined)?.nextCursor;
          if (!next) break;
          lastCursor = cursor = next;
        }
        if (lastCursor === undefined) throw new Error('list_sessions gave no second page');
        const times = await alternate(rounds, {
          first: () => call({}),
          failed: () => call({ verdict: 'FAIL', limit: 100 }),
          filtered: () => call({ scenario: SCENARIOS.player, since }),
          deep: () => call({ cursor: lastCursor, limit: 100 }),
        });
        const rows: Row[] = Object.entries({
          'first page (20), no filter': times.first,
          'FAIL, a page of 100': times.failed,
          'scenario + since': times.filtered,
          'the last page of 100 (its cursor)': times.deep,
        }).map(([name, ms]) => ({
          name: `list_sessions of ${big.toLocaleString('en-US')}: ${name}`,
          budget: '< 1 s per call',
          measured: fmtMs(median(ms)),
          baseline: '1 s',
          ratio: round(median(ms) / 1000, 3),
          holds: median(ms) < 1000,
          notes: [`${rounds} rounds, arms alternated, median of the client's round trip.`],
          data: { ms: ms.map((v) => round(v, 2)) },
        }));
        return { rows, notes: [`index of ${big} sessions before: ${fmtMs(index.ms)}`] };
      } finally {
        await client.close();
      }
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  },
};
