/** One short run of the built `mcec-record stdio` in front of the built simulator, as an MCP client drives it. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { collectOutput, ROOT } from './programs.js';

const RECORD_CLI = path.join(ROOT, 'dist/cli/mcec-record.js');
const SIM_CLI = path.join(ROOT, 'dist/cli/mcec-sim.js');

/** `mcec-record stdio` over the simulator: initialize, one tool call, stdin closed; its exit code and stderr. */
export async function recordOneStdioCall(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(
    process.execPath,
    [RECORD_CLI, 'stdio', ...args, '--', process.execPath, SIM_CLI, '--stdio'],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  const output = collectOutput(child);
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const until = async (done: () => boolean, what: string) => {
    for (let i = 0; i < 600 && !done(); i++) await new Promise((r) => setTimeout(r, 50));
    if (!done()) throw new Error(`no answer to ${what} in 30 s: ${output.stderr.slice(0, 500)}`);
  };
  const send = (msg: object) => child.stdin.write(`${JSON.stringify(msg)}\n`);
  send({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  await until(() => output.stdout.includes('"id":1'), 'initialize');
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'displays', arguments: {} } });
  await until(() => output.stdout.includes('"id":2'), 'the tool call');
  child.stdin.end();
  return { code: await exited, stderr: output.stderr };
}
