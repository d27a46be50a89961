/** Loopback and Host/Origin checks the proxy applies like the MCEC server does (mcec-wire §4). */

import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

/** Whether an Authorization header is `Bearer <token>`, compared in constant time (the simulator, mcec-bundle mcp). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (!header || !/^bearer /i.test(header)) return false;
  const a = Buffer.from(header.slice(7).trim(), 'utf8');
  const b = Buffer.from(token, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * True for a loopback host name or address: localhost, 127.0.0.0/8, ::1, and 127.0.0.0/8 mapped into IPv6
 * (`::ffff:127.0.0.2`, or as a URL writes it, `::ffff:7f00:2`); brackets allowed.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = h.toLowerCase();
  if (lower === 'localhost') return true;
  if (isIP(lower) === 4) return lower.startsWith('127.');
  if (isIP(lower) !== 6) return false;
  if (lower === '::1' || lower === '0:0:0:0:0:0:0:1') return true;
  const mapped = lower.startsWith('::ffff:')
    ? lower.slice(7)
    : lower.startsWith('0:0:0:0:0:ffff:')
      ? lower.slice(15)
      : null;
  if (mapped === null) return false;
  if (isIP(mapped) === 4) return mapped.startsWith('127.');
  const high = /^([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(mapped);
  return high !== null && Number.parseInt(high[1]!, 16) >> 8 === 127;
}

/** Split a Host header into host and port; null when it cannot be read. */
export function parseHostHeader(value: string): { host: string; port: number | null } | null {
  const v = value.trim();
  if (!v) return null;
  let host: string;
  let portText: string | undefined;
  if (v.startsWith('[')) {
    const close = v.indexOf(']');
    if (close < 0) return null;
    host = v.slice(0, close + 1);
    const rest = v.slice(close + 1);
    if (rest === '') portText = undefined;
    else if (rest.startsWith(':')) portText = rest.slice(1);
    else return null;
  } else {
    const colon = v.lastIndexOf(':');
    if (colon >= 0 && v.indexOf(':') !== colon) return null; // bare IPv6 without brackets
    host = colon >= 0 ? v.slice(0, colon) : v;
    portText = colon >= 0 ? v.slice(colon + 1) : undefined;
  }
  if (portText === undefined) return { host, port: null };
  if (!/^\d{1,5}$/.test(portText)) return null;
  return { host, port: Number(portText) };
}

/**
 * Why a request fails the Host/Origin gate, or null when it passes. Host first, then Origin: MCEC's order
 * (`GateHttpRequest`), so a request failing both is refused for its Host, as MCEC refuses it.
 */
export function hostOriginRejection(
  headers: { host?: string | undefined; origin?: string | undefined },
  listenPort: number,
  allowNonLoopback: boolean,
): string | null {
  if (!allowNonLoopback) {
    const host = headers.host === undefined ? null : parseHostHeader(headers.host);
    if (host === null) return 'host header missing or malformed';
    if (!isLoopbackHost(host.host)) return 'host not allowed';
    // Like the server: a Host without a port is accepted; one with a port must name the listening port.
    if (host.port !== null && host.port !== listenPort) return 'host port does not match';
  }
  const origin = headers.origin;
  if (origin !== undefined && origin !== '') {
    let originHost: string | null = null;
    try {
      originHost = new URL(origin).hostname;
    } catch {
      originHost = null;
    }
    if (originHost === null || !isLoopbackHost(originHost)) return 'origin not allowed';
  }
  return null;
}

/** Which rules the proxy applies: MCEC's own (its limits and texts), or the MCP specification's. */
export type TargetKind = 'mcec' | 'mcp';

/** A refusal as the client gets it. */
export interface Refusal {
  status: number;
  body: string;
  contentType: string;
}

/** MCEC's bytes for its refusals (`McpHttpTransport.RejectHttp`, `WriteHttp`): `{"error": ...}`, application/json. */
const MCEC_TEXT: Record<string, string> = {
  host: 'Forbidden: Host must be a loopback authority',
  origin: 'Forbidden: cross-origin requests are not allowed',
};

/**
 * The 403 for a Host/Origin rejection: MCEC's exact text for MCEC; for another server a JSON-RPC error
 * without an id (the MCP specification: a server MUST answer an invalid Origin with 403, and MAY say why
 * in a JSON-RPC error), worded like the MCP SDK's own DNS-rebinding protection.
 */
export function hostOriginRefusal(kind: TargetKind, reason: string): Refusal {
  if (kind === 'mcec') return mcecRefusal(403, mcecHostOriginText(reason));
  return mcpRefusal(
    403,
    -32000,
    reason.startsWith('origin') ? 'Invalid Origin header' : 'Invalid Host header',
  );
}

/** MCEC's error text for a Host/Origin rejection (`hostOriginRejection`'s reason). */
export function mcecHostOriginText(reason: string): string {
  return MCEC_TEXT[reason.startsWith('origin') ? 'origin' : 'host']!;
}

/** A refusal in MCEC's shape. */
export function mcecRefusal(status: number, error: string): Refusal {
  return { status, body: JSON.stringify({ error }), contentType: 'application/json' };
}

/** A refusal as an MCP server's JSON-RPC error without an id. */
export function mcpRefusal(status: number, code: number, message: string): Refusal {
  return {
    status,
    body: JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }),
    contentType: 'application/json',
  };
}

/**
 * Why a POST's request-target is not the endpoint, or null when it is: exactly `endpoint`, optionally with a
 * query. Every other spelling is refused (404, like MCEC) rather than forwarded, because MCEC normalizes
 * paths (`/./mcp`, `/%2e/mcp`, `/x/../mcp` reach its dispatcher) and what it would run must be gated and
 * recorded here. Absolute-form targets (`http://host/mcp`) are refused too.
 */
export function endpointPathRejection(requestTarget: string | undefined, endpoint: string): string | null {
  const raw = requestTarget ?? '';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  if (path === endpoint) return null;
  return normalizedPath(raw).toLowerCase() === endpoint.toLowerCase()
    ? `path reads as ${endpoint} once normalized (refused: only the exact path is forwarded, gated and recorded)`
    : `path is not ${endpoint}`;
}

/**
 * A request-target as a normalizing server might read it: authority of an absolute form dropped, query and
 * fragment cut, percent-escapes decoded once, `\` as `/`, repeated slashes and dot segments removed.
 * Only used to name a refusal; the decision itself is an exact comparison.
 */
export function normalizedPath(requestTarget: string): string {
  let t = requestTarget;
  const scheme = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*/.exec(t);
  if (scheme) t = t.slice(scheme[0].length) || '/';
  const cut = t.search(/[?#]/);
  if (cut >= 0) t = t.slice(0, cut);
  t = percentDecode(t)
    .replace(/\\/g, '/')
    .replace(/\/{2,}/g, '/');
  const out: string[] = [];
  for (const segment of t.split('/').slice(1)) {
    if (segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  const last = t.split('/').pop();
  return `/${out.join('/')}${(last === '.' || last === '..') && out.length > 0 ? '/' : ''}`;
}

function percentDecode(text: string): string {
  if (!text.includes('%')) return text;
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === '%' && /^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else bytes.push(...Buffer.from(text[i]!, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}
