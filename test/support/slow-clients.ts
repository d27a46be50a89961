/** HTTP clients that hold a server's request slots: each sends its headers, then its body a byte at a time. */
import net from 'node:net';

/** One trickling client: what it was answered (the status line's code, or null while none came). */
export interface SlowClient {
  status(): number | null;
  /** Resolves when the server closed the connection (or it failed). */
  closed: Promise<void>;
  destroy(): void;
}

/**
 * `count` clients POSTing to `url` a body declared as `bodyBytes` long, sent one byte every `everyMs`: a
 * server without a body deadline keeps each one in flight for `bodyBytes * everyMs`. Resolves once every
 * client's headers and first byte were sent.
 */
export async function slowClients(
  url: string,
  count: number,
  options: { everyMs: number; bodyBytes?: number; headers?: Record<string, string> },
): Promise<SlowClient[]> {
  const target = new URL(url);
  const bodyBytes = options.bodyBytes ?? 1000;
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<SlowClient>((resolve, reject) => {
          const socket = net.connect(Number(target.port), target.hostname);
          let answer = '';
          let timer: NodeJS.Timeout | undefined;
          const closed = new Promise<void>((done) => socket.once('close', () => done()));
          socket.setEncoding('latin1');
          socket.on('data', (s: string) => {
            answer += s;
          });
          socket.on('error', () => {});
          socket.once('connect', () => {
            const head = [
              `POST ${target.pathname} HTTP/1.1`,
              `Host: ${target.host}`,
              'Content-Type: application/json',
              `Content-Length: ${bodyBytes}`,
              ...Object.entries(options.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
              '',
              '',
            ].join('\r\n');
            socket.write(`${head}{`);
            let sent = 1;
            timer = setInterval(() => {
              if (sent >= bodyBytes - 1 || socket.destroyed) return;
              sent += 1;
              socket.write(' ');
            }, options.everyMs);
            resolve({
              status: () => {
                const m = /^HTTP\/1\.1 (\d{3})/.exec(answer);
                return m ? Number(m[1]) : null;
              },
              closed,
              destroy: () => {
                clearInterval(timer);
                socket.destroy();
              },
            });
          });
          socket.once('close', () => clearInterval(timer));
          socket.once('error', (err) => reject(err));
        }),
    ),
  );
}
