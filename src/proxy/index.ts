/** Recording proxies: put mcec-recorder on the wire between an MCP client and MCEC (HTTP or stdio). */
export { hostOriginRejection, isLoopbackHost } from './gates.js';
export {
  DEFAULT_MAX_BODY_BYTES,
  DEFAULT_TIMEOUT_MS,
  type HttpProxy,
  type HttpProxyOptions,
  ProxyConfigError,
  startHttpProxy,
} from './http.js';
export type { ProxyExchangeMeta, ProxyPendingExchange, ProxyRecorder } from './recorder-port.js';
export { EXIT_CANNOT_START, runStdioProxy, type StdioProxyOptions } from './stdio.js';
