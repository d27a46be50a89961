/** Loopback and Host/Origin checks the proxy applies like the MCEC server does (mcec-wire §4). */

import { isIP } from 'node:net';

/** True for a loopback host name or address: localhost, 127.0.0.0/8, ::1 (brackets allowed). */
export function isLoopbackHost(host: string): boolean {
  const h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const lower = h.toLowerCase();
  if (lower === 'localhost') return true;
  if (isIP(lower) === 4) return lower.startsWith('127.');
  if (isIP(lower) === 6)
    return lower === '::1' || lower === '0:0:0:0:0:0:0:1' || lower === '::ffff:127.0.0.1';
  return false;
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

/** Why a request fails the Host/Origin gate, or null when it passes. */
export function hostOriginRejection(
  headers: { host?: string | undefined; origin?: string | undefined },
  listenPort: number,
  allowNonLoopback: boolean,
): string | null {
  const origin = headers.origin;
  if (origin !== undefined) {
    let originHost: string | null = null;
    try {
      originHost = new URL(origin).hostname;
    } catch {
      originHost = null;
    }
    if (originHost === null || !isLoopbackHost(originHost)) return 'origin not allowed';
  }
  if (allowNonLoopback) return null;
  const host = headers.host === undefined ? null : parseHostHeader(headers.host);
  if (host === null) return 'host header missing or malformed';
  if (!isLoopbackHost(host.host)) return 'host not allowed';
  // Like the server: a Host without a port is accepted; one with a port must name the listening port.
  if (host.port !== null && host.port !== listenPort) return 'host port does not match';
  return null;
}
