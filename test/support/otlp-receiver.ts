/**
 * An OTLP/HTTP trace receiver for tests: decodes each protobuf request with the official proto definitions
 * (test/support/otlp-proto) and keeps the spans; it can answer with an error status, or slowly.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = path.dirname(fileURLToPath(import.meta.url));

let requestType: protobuf.Type | undefined;
function exportRequestType(): protobuf.Type {
  if (requestType) return requestType;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(here, 'otlp-proto', target);
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
  requestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return requestType;
}

export type AttrValue = string | number | boolean | AttrValue[] | null;

/** A decoded span, ids as hex, times as ms since the epoch, attributes flattened. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttrValue>;
  events: Array<{ name: string; timeMs: number; attributes: Record<string, AttrValue> }>;
  links: Array<{ traceId: string; spanId: string }>;
  status: { code: number; message: string };
  resource: Record<string, AttrValue>;
  scope: string;
}

type Any = Record<string, unknown>;

function value(v: Any | undefined): AttrValue {
  if (!v) return null;
  if ('stringValue' in v) return v.stringValue as string;
  if ('boolValue' in v) return v.boolValue as boolean;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue as number;
  if ('arrayValue' in v) return (((v.arrayValue as Any).values as Any[]) ?? []).map(value);
  return null;
}

function attrs(list: unknown): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of (list as Any[] | undefined) ?? []) out[kv.key as string] = value(kv.value as Any);
  return out;
}

const hex = (b: unknown) => (b instanceof Uint8Array ? Buffer.from(b).toString('hex') : '');
const nanosToMs = (n: unknown) => Number(BigInt(String(n ?? 0)) / 1_000_000n);

/** Decode one ExportTraceServiceRequest body into spans. */
export function decodeTraces(body: Buffer): ReceivedSpan[] {
  const message = exportRequestType().decode(body);
  const obj = exportRequestType().toObject(message, { longs: String, defaults: true, arrays: true }) as Any;
  const out: ReceivedSpan[] = [];
  for (const rs of obj.resourceSpans as Any[]) {
    const resource = attrs((rs.resource as Any | undefined)?.attributes);
    for (const ss of rs.scopeSpans as Any[]) {
      const scope = ((ss.scope as Any | undefined)?.name as string) ?? '';
      for (const s of ss.spans as Any[]) {
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name as string,
          kind: s.kind as number,
          startMs: nanosToMs(s.startTimeUnixNano),
          endMs: nanosToMs(s.endTimeUnixNano),
          attributes: attrs(s.attributes),
          events: ((s.events as Any[]) ?? []).map((e) => ({
            name: e.name as string,
            timeMs: nanosToMs(e.timeUnixNano),
            attributes: attrs(e.attributes),
          })),
          links: ((s.links as Any[]) ?? []).map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
          status: {
            code: ((s.status as Any | undefined)?.code as number) ?? 0,
            message: ((s.status as Any | undefined)?.message as string) ?? '',
          },
          resource,
          scope,
        });
      }
    }
  }
  return out;
}

/** A running receiver. `answer` decides each request's HTTP status (default 200) and delay. */
export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  requests: number;
  /** Requests received with their content type and headers, for header checks. */
  headers: http.IncomingHttpHeaders[];
  answer: (n: number) => { status: number; delayMs?: number };
  close(): Promise<void>;
}

/** Start a receiver on 127.0.0.1 at a free port, serving POST /v1/traces. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver: OtlpReceiver = {
    url: '',
    spans: [],
    requests: 0,
    headers: [],
    answer: () => ({ status: 200 }),
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      receiver.requests += 1;
      receiver.headers.push(req.headers);
      const { status, delayMs = 0 } = receiver.answer(receiver.requests);
      // A query (an API key some collectors take there) does not change the path.
      const traces = new URL(req.url ?? '/', 'http://receiver').pathname === '/v1/traces';
      setTimeout(() => {
        if (status === 200 && traces) {
          receiver.spans.push(...decodeTraces(Buffer.concat(parts)));
          res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
        } else res.writeHead(traces ? status : 404).end();
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}
