import { describe, expect, it } from 'vitest';
import { classifyMessage } from '../../src/proxy/jsonrpc.js';
import { LineSplitter } from '../../src/proxy/lines.js';
import { hostOriginRejection, isLoopbackHost, parseHostHeader } from '../../src/wire/gates.js';

describe('loopback and Host/Origin gate', () => {
  it('knows loopback hosts', () => {
    const loopback = ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]'];
    // 127/8 mapped into IPv6, as written and as a URL normalizes it (new URL('http://[::ffff:127.0.0.2]')).
    loopback.push('::ffff:127.0.0.1', '[::ffff:127.0.0.2]', new URL('http://[::ffff:127.0.0.2]').hostname);
    for (const h of loopback) expect([h, isLoopbackHost(h)]).toEqual([h, true]);
    const other = ['0.0.0.0', '10.0.0.1', 'example.com', '128.0.0.1', '::', 'localhost.evil.com'];
    other.push('::ffff:10.0.0.1', new URL('http://[::ffff:10.0.0.1]').hostname, '::ffff:8000:1');
    for (const h of other) expect([h, isLoopbackHost(h)]).toEqual([h, false]);
  });

  it('reads Host headers', () => {
    expect(parseHostHeader('127.0.0.1:5152')).toEqual({ host: '127.0.0.1', port: 5152 });
    expect(parseHostHeader('[::1]:80')).toEqual({ host: '[::1]', port: 80 });
    expect(parseHostHeader('localhost')).toEqual({ host: 'localhost', port: null });
    expect(parseHostHeader('::1:80')).toBeNull();
    expect(parseHostHeader('a:b')).toBeNull();
  });

  it('rejects a foreign Host, a wrong port and a foreign Origin', () => {
    expect(hostOriginRejection({ host: '127.0.0.1:5152' }, 5152, false)).toBeNull();
    expect(
      hostOriginRejection({ host: 'localhost:5152', origin: 'http://localhost:3000' }, 5152, false),
    ).toBeNull();
    expect(hostOriginRejection({ host: 'evil.com:5152' }, 5152, false)).toMatch(/host/);
    expect(hostOriginRejection({ host: '127.0.0.1:5151' }, 5152, false)).toMatch(/port/);
    expect(hostOriginRejection({}, 5152, false)).toMatch(/host/);
    expect(hostOriginRejection({ host: '127.0.0.1:5152', origin: 'https://evil.com' }, 5152, false)).toMatch(
      /origin/,
    );
    expect(hostOriginRejection({ host: '127.0.0.1:5152', origin: 'null' }, 5152, false)).toMatch(/origin/);
    // --allow-remote: any Host, but a browser page elsewhere still cannot drive the proxy
    expect(hostOriginRejection({ host: 'box.lan:5152' }, 5152, true)).toBeNull();
    expect(hostOriginRejection({ host: 'box.lan:5152', origin: 'https://evil.com' }, 5152, true)).toMatch(
      /origin/,
    );
  });
});

describe('line splitting and classification', () => {
  it('splits chunks into lines across chunk borders and keeps a last line without newline', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line.toString('utf8')));
    splitter.push(Buffer.from('{"a":1}\n{"b"'));
    splitter.push(Buffer.from(':2}\n\n{"c":'));
    splitter.push(Buffer.from('3}'));
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '']);
    splitter.end();
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '', '{"c":3}']);
  });

  it('classifies requests, notifications, responses and the rest', () => {
    expect(classifyMessage('{"jsonrpc":"2.0","id":1,"method":"ping"}').kind).toBe('request');
    expect(classifyMessage('{"jsonrpc":"2.0","method":"notifications/initialized"}').kind).toBe(
      'notification',
    );
    expect(classifyMessage('{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}').kind).toBe('response');
    expect(classifyMessage('{"jsonrpc":"2.0","id":"x","result":{}}').kind).toBe('response');
    expect(classifyMessage('hello')).toMatchObject({ kind: 'invalid', reason: 'not JSON' });
    expect(classifyMessage('[1,2]')).toMatchObject({ kind: 'invalid', reason: 'batch' });
    expect(classifyMessage('{"id":{},"method":"x"}').kind).toBe('invalid');
  });
});
