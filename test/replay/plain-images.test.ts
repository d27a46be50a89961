/**
 * A real MCP server that is not MCEC answers with a PNG in an embedded resource's blob as well as in an image
 * block, and with a WebP, recorded through `mcec-record stdio` (each image written once as an artifact, only its
 * summary in the log); the replay must give the SDK client the server's results back byte for byte.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { describe, expect, it } from 'vitest';
import { pidAlive } from '../../src/util/temp-files.js';
import { waitFor } from '../proxy/helpers.js';
import { readSessions } from '../proxy/sim-script.js';
import { tempDirPerTest } from '../support/per-test-temp.js';
import { RECORD_CLI, REPLAY_CLI } from './helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/image-resource-server.mjs', import.meta.url));
const temp = tempDirPerTest('replay-plain-images-');

async function callBoth(transport: StdioClientTransport | Transport): Promise<unknown[]> {
  const client = new Client({ name: 'plain-images-test', version: '1.0.0' });
  await client.connect(transport);
  const results = [
    await client.callTool({ name: 'screen-as-resource', arguments: {} }),
    await client.callTool({ name: 'screen', arguments: {} }),
    await client.callTool({ name: 'screen-webp', arguments: {} }),
  ];
  await client.close();
  return results;
}

describe('a replay of a server that is not MCEC', () => {
  it("puts an image back where the recorder took it from: an embedded resource's blob, an image block, a WebP", async () => {
    const direct = await callBoth(new StdioClientTransport({ command: process.execPath, args: [SERVER] }));

    const sessionsDir = path.join(temp.dir, 'sessions');
    fs.mkdirSync(sessionsDir);
    const recording = new StdioClientTransport({
      command: process.execPath,
      args: [RECORD_CLI, 'stdio', '--sessions', sessionsDir, '--', process.execPath, SERVER],
      stderr: 'ignore',
    });
    expect(await callBoth(recording)).toEqual(direct);
    await waitFor(() => !pidAlive(recording.pid!), 20_000);

    // The log holds no image bytes: the PNG is one artifact file (the blob and the block its summary), the WebP
    // another (before, a WebP was no image to the recorder: its bytes were dropped, neither stored nor written).
    const [s] = readSessions(sessionsDir);
    expect(fs.readdirSync(path.join(s!.dir, 'artifacts')).sort()).toEqual([
      expect.stringMatching(/^image-call1-.+\.png$/),
      expect.stringMatching(/^image-call3-.+\.webp$/),
    ]);
    const bytesOf = (i: number) => (direct[i] as { content: Array<{ data: string }> }).content[0]!.data;
    for (const c of s!.calls) {
      expect(c.response).not.toContain(bytesOf(1).slice(0, 64));
      expect(c.response).not.toContain(bytesOf(2).slice(0, 64));
    }

    const replayed = await callBoth(
      new StdioClientTransport({
        command: process.execPath,
        args: [REPLAY_CLI, '--stdio', '--order', 'strict', s!.dir],
        stderr: 'ignore',
      }),
    );
    expect(replayed).toEqual(direct);
  }, 60_000);
});
