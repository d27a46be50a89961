/** Recording proxies: put mcec-recorder on the wire between an MCP client and MCEC (HTTP or stdio). */

export { endpointPathRejection, hostOriginRejection, isLoopbackHost } from '../wire/gates.js';
export { DEFAULT_MAX_RECORD_BYTES, MAX_RECORD_BYTES_LIMIT } from './bounded.js';
export {
  DeclarationFilter,
  declarationOf,
  isRecorderNotification,
  MAX_DECLARATION_BYTES,
  STEP_NOTIFICATION,
  VERDICT_NOTIFICATION,
} from './declarations.js';
export {
  DEFAULT_LATE_ANSWER_MS,
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_TIMEOUT_MS,
  type HttpProxy,
  type HttpProxyOptions,
  ProxyConfigError,
  startHttpProxy,
} from './http.js';
export type {
  ProxyExchangeMeta,
  ProxyOversizeAnswer,
  ProxyPendingExchange,
  ProxyRecorder,
} from './recorder-port.js';
export { EXIT_CANNOT_START, runStdioProxy, type StdioProxyOptions } from './stdio.js';
export { MAX_TIMEOUT_MS } from './timeouts.js';
