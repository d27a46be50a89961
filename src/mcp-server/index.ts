/** The MCP server over a sessions dir (`mcec-bundle mcp`): see README.md. */
export { LIMITS, SessionsEvidence, ToolError } from './evidence.js';
export { publishedSchema, schemaFile } from './schemas.js';
export { createEvidenceServer, documentUri, type EvidenceServerOptions } from './server.js';
export { TOOLS } from './tools.js';
export { type EvidenceHttpServer, type HttpServeOptions, serveHttp, serveStdio } from './transports.js';
