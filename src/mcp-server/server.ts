/**
 * The MCP server over a sessions dir, on the official SDK's low-level `Server` (the tools' schemas are
 * JSON Schema files, not zod): tools/list and tools/call from tools.ts, each session's failure-summary.md
 * and report.html as resources. A tool's failure is an MCP tool error (`isError`), never a crash.
 */

import { createRequire } from 'node:module';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { ValidateFunction } from 'ajv';
import { packageVersion } from '../bundle/version.js';
import {
  jsonBytes,
  LIMITS,
  SESSION_DOCUMENTS,
  type SessionDocument,
  SessionsEvidence,
  ToolError,
} from './evidence.js';
import { publishedSchema } from './schemas.js';
import { TOOLS } from './tools.js';

/** Sessions per resources/list page (two resources each). */
const RESOURCE_PAGE = 50;
const URI_SCHEME = 'mcec-session://';

const INSTRUCTIONS = `Evidence recorded by mcec-recorder from agents that drive Windows desktops through MCEC: one session per run,
each call with its arguments and result envelope (redacted), images, failures and a verdict. To find out why a
run failed: list_sessions {verdict: "FAIL", limit: 1} -> get_summary {session} (the failing call and its seq) ->
get_image {session, seq} -> diff {session} (against the last passing run of the scenario). Read-only except the
bundle tool, which writes a zip into the sessions dir (and the session's report.html). Long recorded strings
come back clipped, ending in "... [N more chars cut]".`;

/** The URI of a session document. */
export function documentUri(dirName: string, doc: SessionDocument): string {
  return `${URI_SCHEME}${dirName}/${doc}`;
}

function parseDocumentUri(uri: string): { session: string; doc: SessionDocument } | null {
  if (!uri.startsWith(URI_SCHEME)) return null;
  const rest = uri.slice(URI_SCHEME.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return null;
  const doc = rest.slice(slash + 1);
  if (!(SESSION_DOCUMENTS as readonly string[]).includes(doc)) return null;
  try {
    return { session: decodeURIComponent(rest.slice(0, slash)), doc: doc as SessionDocument };
  } catch {
    return null; // a malformed %-escape
  }
}

/** A compiled input validator per tool (ajv, loaded on first use). */
function inputValidators(): Map<string, ValidateFunction> {
  const require = createRequire(import.meta.url);
  const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  return new Map(TOOLS.map((t) => [t.name, ajv.compile(t.inputSchema)]));
}

function toolError(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** Options of {@link createEvidenceServer}. */
export interface EvidenceServerOptions {
  sessionsDir: string;
  /** Where unexpected errors are told (default: stderr), besides the tool error the client gets. */
  log?: (line: string) => void;
}

/** An SDK Server answering over the sessions dir; connect it to a transport. */
export function createEvidenceServer(options: EvidenceServerOptions): Server {
  const evidence = new SessionsEvidence(options.sessionsDir);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const validators = inputValidators();
  const server = new Server(
    { name: 'mcec-bundle', title: 'mcec-recorder evidence', version: packageVersion() },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  const published = TOOLS.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema as { type: 'object' },
    outputSchema: publishedSchema(t.outputSchema) as { type: 'object' },
    annotations: { readOnlyHint: t.name !== 'bundle', openWorldHint: false },
  }));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: published }));

  server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
    const tool = TOOLS.find((t) => t.name === request.params.name);
    if (!tool)
      throw rpcError(
        ErrorCode.InvalidParams,
        `unknown tool ${JSON.stringify(request.params.name.slice(0, 80))}`,
      );
    const args = request.params.arguments ?? {};
    const valid = validators.get(tool.name)!;
    if (!valid(args)) {
      const why = (valid.errors ?? []).map((e) =>
        `${e.instancePath || '(arguments)'} ${e.message ?? ''}`.trim(),
      );
      return toolError(`invalid arguments for ${tool.name}: ${why.join('; ')}`);
    }
    try {
      const answer = await tool.run(evidence, args);
      const result = {
        content: answer.content,
        structuredContent: answer.structured as Record<string, unknown>,
      };
      const bytes = jsonBytes(result);
      if (bytes > LIMITS.answerBytes) {
        return toolError(
          `the answer of ${tool.name} would be ${bytes} bytes, over the ${LIMITS.answerBytes} this server sends at once: ${tool.smaller}`,
        );
      }
      return result;
    } catch (err) {
      if (err instanceof ToolError) return toolError(err.message);
      log(`mcec-bundle mcp: ${tool.name} failed: ${(err as Error).stack ?? String(err)}`);
      return toolError(`${tool.name} failed: ${(err as Error).message}`);
    }
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: SESSION_DOCUMENTS.map((doc) => ({
      uriTemplate: `${URI_SCHEME}{session}/${doc}`,
      name: doc,
      description:
        doc === 'failure-summary.md'
          ? "A session's failure summary (Markdown), rendered from its log; {session} is an id or dirName."
          : "A session's report.html (its timeline page) when it has been written.",
      mimeType: doc === 'failure-summary.md' ? 'text/markdown' : 'text/html',
    })),
  }));

  server.setRequestHandler(ListResourcesRequestSchema, async (request) => {
    let page: Awaited<ReturnType<SessionsEvidence['documentsPage']>>;
    try {
      page = await evidence.documentsPage(request.params?.cursor, RESOURCE_PAGE);
    } catch (err) {
      if (err instanceof ToolError) throw rpcError(ErrorCode.InvalidParams, err.message);
      throw err;
    }
    return {
      // report.html only where it has been written (mcec-bundle report, or the bundle tool).
      resources: page.rows.flatMap((s) =>
        SESSION_DOCUMENTS.filter((doc) => doc !== 'report.html' || s.reportHtml).map((doc) => ({
          uri: documentUri(s.dirName, doc),
          name: `${s.dirName}/${doc}`,
          description: `${s.verdict ?? 'unread'}${s.scenario ? `: ${s.scenario}` : ''}`,
          mimeType: doc === 'failure-summary.md' ? 'text/markdown' : 'text/html',
        })),
      ),
      ...(page.next !== null ? { nextCursor: page.next } : {}),
    };
  });

  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const uri = request.params.uri;
    const parsed = parseDocumentUri(uri);
    if (!parsed) {
      throw rpcError(
        ErrorCode.InvalidParams,
        `unknown resource ${JSON.stringify(uri.slice(0, 200))}: use ${URI_SCHEME}<session>/failure-summary.md or report.html`,
      );
    }
    try {
      const doc = await evidence.document(parsed.session, parsed.doc);
      const result = { contents: [{ uri, mimeType: doc.mimeType, text: doc.text }] };
      const bytes = jsonBytes(result);
      if (bytes > LIMITS.answerBytes) {
        throw new ToolError(
          `${uri} would be ${bytes} bytes as JSON, over the ${LIMITS.answerBytes} this server sends at once; ${parsed.doc === 'report.html' ? 'open report.html in the session dir in a browser instead' : `run mcec-bundle summary ${parsed.session} to write failure-summary.md into the session dir and read it there`}`,
        );
      }
      return result;
    } catch (err) {
      if (err instanceof ToolError) throw rpcError(-32002, err.message); // MCP's "resource not found"
      log(`mcec-bundle mcp: reading ${uri} failed: ${(err as Error).stack ?? String(err)}`);
      throw rpcError(ErrorCode.InternalError, `reading the resource failed: ${(err as Error).message}`);
    }
  });
  return server;
}

/**
 * A JSON-RPC error whose message is `message` alone: the SDK sends an error's own message, and McpError's
 * starts with "MCP error <code>:", which an SDK client then says a second time.
 */
function rpcError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}
