// The floor of the HTTP proxy figure: a bare Node pass-through proxy in front of the same target. Each
// request is piped to the target over a keep-alive agent and the answer piped back: no parsing, no gates,
// no recording. Usage: node bare-proxy.cjs <target URL>; prints "bare proxy listening on <url>".
const http = require('node:http');

const target = new URL(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 16 });

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, host: target.host };
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  process.stdout.write(`bare proxy listening on http://127.0.0.1:${port}${target.pathname}\n`);
});
process.on('SIGTERM', () => process.exit(0));
