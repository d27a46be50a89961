/** What a session records about where it ran: OS, Node, the recorder's version. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let version: string | undefined;

/** The recorder's version from its package.json (found upwards from this file, in src/ or dist/). */
export function recorderVersion(): string {
  if (version !== undefined) return version;
  version = '0.0.0';
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i += 1) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (pkg.name === 'mcec-recorder' && typeof pkg.version === 'string') {
        version = pkg.version;
        break;
      }
    } catch {
      // no package.json here: look one level up
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return version;
}

/** MCP server identity from an `initialize` response. */
export interface ServerInfo {
  name: string;
  version: string;
  protocolVersion?: string;
  /** MCEC's non-standard connect-time map of enabled and gated commands. */
  commandAccess?: unknown;
  /** sha256 (hex) of the `instructions` text (about 26 KB on MCEC): which guidance the agent was given. */
  instructionsSha256?: string;
}

/**
 * A session's `environment` column: `{os, node, recorder, server?, observationTools?}`. The observation set
 * is the recorder's (the tool catalog's unless configured), so a report picks the last good observation the
 * way the recorder did.
 */
export function environmentOf(
  server: ServerInfo | undefined,
  observationTools?: Iterable<string>,
): Record<string, unknown> {
  const env: Record<string, unknown> = {
    os: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    recorder: recorderVersion(),
  };
  if (server) env.server = server;
  if (observationTools) env.observationTools = [...observationTools];
  return env;
}
