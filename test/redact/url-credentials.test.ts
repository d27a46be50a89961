/**
 * A URL shown or stored (the collector endpoint, errors naming it): its credentials as `***`, read by parsing
 * the URL where it is one (a password holding a quote or a space, a token alone as the userinfo, signed
 * query strings), by the inline scan otherwise; nothing else in the text changes.
 */
import { describe, expect, it } from 'vitest';
import { withoutUrlCredentials } from '../../src/redact/inline-secrets.js';

describe('withoutUrlCredentials', () => {
  it.each([
    [
      'http://otuser:UrlPw-5551@127.0.0.1:4318/v1/traces?api_key=QueryKey-4242',
      'http://otuser:***@127.0.0.1:4318/v1/traces?api_key=***',
    ],
    ["http://u:pa'SECRETQ@127.0.0.1:9/v1/traces", 'http://u:***@127.0.0.1:9/v1/traces'],
    ['http://u:SEC RET1@h/v1/traces', 'http://u:***@h/v1/traces'],
    ['http://u:p<a>"SECRET2@h/v1/traces', 'http://u:***@h/v1/traces'],
    ['https://TOKENabc123@collector.example/v1/traces', 'https://***@collector.example/v1/traces'],
    ['https://h/v1/traces?password=a;SECRET3&page=2', 'https://h/v1/traces?password=***&page=2'],
    [
      'https://b.example/o?sig=SIG4&X-Amz-Signature=SIG5&X-Amz-Credential=CRED6&X-Amz-Date=20261206',
      'https://b.example/o?sig=***&X-Amz-Signature=***&X-Amz-Credential=***&X-Amz-Date=20261206',
    ],
    // The scan still runs after the parse: a secret key in the fragment or a path parameter, a known token.
    ['http://u:pw@host/#access_token=SECRETFRAG', 'http://u:***@host/#access_token=***'],
    ['http://u:pw@host/x?q=ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'http://u:***@host/x?q=***'],
    ['https://u:pw@host/v1/traces;api_key=zzz', 'https://u:***@host/v1/traces;api_key=***'],
  ])('%s', (given, shown) => {
    expect(withoutUrlCredentials(given)).toBe(shown);
  });

  it('leaves a URL without credentials, and text that is not one URL, as given (the scan still masks)', () => {
    for (const same of ['http://collector:4318', 'ftp://x', 'notaurl', 'http://h/v1/traces?page=2'])
      expect(withoutUrlCredentials(same)).toBe(same);
    expect(withoutUrlCredentials('connect ECONNREFUSED http://u:pw-7@h:1/x')).toBe(
      'connect ECONNREFUSED http://u:***@h:1/x',
    );
  });
});
