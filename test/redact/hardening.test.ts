/** Redaction that holds: typed MCEC commands, secret budgets, JSON and URL forms, encoded echoes, evidence kept. */
import { describe, expect, it } from 'vitest';
import {
  Automaton,
  createRedactor,
  echoForms,
  isDefaultSecretKey,
  keyWords,
  REDACTED,
  redactCommandLine,
  SECRET_BUDGET,
  SecretStore,
  scrubTypedCommands,
} from '../../src/redact/index.js';
import { mcecStringify } from '../contract/fixtures.js';
import { leakedForm } from '../support/secret-forms.js';

/** True when `text` holds `secret` in any of its forms (case-insensitively). */
function leaks(text: string, secret: string): boolean {
  return leakedForm(text, secret) !== undefined;
}

describe('the automaton', () => {
  it('finds every pattern in one pass, case-folded, overlapping matches merged', () => {
    const a = new Automaton(['he', 'she', 'hers', 'XYZ', 'abcd', 'bc']);
    const text = 'ushers xyz abcd bc Ä';
    const spans = a.find(text);
    expect(spans.map((s) => text.slice(s.start, s.end))).toEqual(['shers', 'xyz', 'abcd', 'bc']);
  });

  it('a longer match reaching back over several earlier ones absorbs them', () => {
    const a = new Automaton(['a', 'c', 'abcde']);
    expect(a.find('xabcdex')).toEqual([{ start: 1, end: 6 }]);
  });

  it('non-ASCII folds too, and an empty automaton finds nothing', () => {
    expect(new Automaton(['pÄss']).find('x PäSS y')).toEqual([{ start: 2, end: 6 }]);
    expect(new Automaton([]).find('anything')).toEqual([]);
  });
});

describe('typed text: MCEC send_command', () => {
  const r = createRedactor();
  it.each([
    ['chars:hunter2', 'chars:[typed text: 7 chars]'],
    ['CHARS:Hunter2', 'CHARS:[typed text: 7 chars]'],
    ['  Chars:two words ', '  Chars:[typed text: 10 chars]'],
    // MCEC's parse is unanchored: text before `chars:` is ignored, the rest is typed.
    ['xyz chars:secret', 'xyz chars:[typed text: 6 chars]'],
    ['chars:C:\\Users\\tig\\file.txt', 'chars:[typed text: 21 chars]'],
    // A one-character command presses that key: one char typed.
    ['a', '[typed text: 1 chars]'],
    ['type Hello world', 'type [typed text: 11 chars]'],
  ])('%s', (command, expected) => {
    expect(r.redactArgs('send_command', { command })).toEqual({ command: expected });
    expect(redactCommandLine(command)).toBe(expected);
  });

  it.each(['enter', 'ctrl-v', 'VK_OEM_PLUS', 'mouse:mtp,10,20', 'shiftdown:ctrl', 'chars:'])(
    '%s types nothing and is kept',
    (command) => {
      expect(r.redactArgs('send_command', { command })).toEqual({ command });
    },
  );

  it("the call's typed text is scrubbed from its own output: error details, nested output, JSON forms", () => {
    const fresh = createRedactor();
    const call = { tool: 'send_command', args: { command: 'chars:pa"ss+wörd' } };
    const env = {
      ok: false,
      error: {
        code: 'unknown-command',
        category: 'internal',
        detail: `Unknown command: 'chars:pa"ss+wörd' is not in the loaded command table.`,
      },
      result: {
        output: JSON.stringify({ success: false, command: 'chars:pa"ss+wörd', error: 'typed pa"ss+wörd' }),
      },
    };
    const out = JSON.stringify(fresh.redact(env, call));
    expect(out).not.toContain('ss+w');
    expect(out).toContain(
      "Unknown command: 'chars:[typed text: 10 chars]' is not in the loaded command table.",
    );
    expect(out).toContain('unknown-command');
    // The same in JSON text as the server writes it (`\u0022`, `\u002B`, non-ASCII escaped).
    const text = mcecStringify(env).replaceAll('\\"', '\\u0022');
    expect(text).toContain('pa\\u0022ss\\u002Bw\\u00F6rd');
    expect(fresh.scrubText(text, call)).not.toMatch(/ss\\u002Bw/);
  });

  it('chars: text met outside its call (a cut request excerpt, a quoted echo) is scrubbed too', () => {
    const excerpt =
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send_command","arguments":{"command":"chars:hunt\\"er2';
    expect(scrubTypedCommands(excerpt)).toBe(
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send_command","arguments":{"command":"chars:[typed text: 8 chars]',
    );
    expect(scrubTypedCommands("Unknown command: 'chars:it's me'. Nothing was executed.")).toBe(
      "Unknown command: 'chars:[typed text: 7 chars]'. Nothing was executed.",
    );
    const closed = '{"command":"Chars:abc def","x":1}';
    expect(scrubTypedCommands(closed)).toBe('{"command":"Chars:[typed text: 7 chars]","x":1}');
    expect(createRedactor().scrubText(excerpt)).not.toContain('hunt');
  });

  it('keepTypedText keeps chars: text', () => {
    const keep = createRedactor({ keepTypedText: true });
    expect(keep.redactArgs('send_command', { command: 'chars:hello' })).toEqual({ command: 'chars:hello' });
    expect(keep.scrubText("Unknown command: 'chars:hello'")).toBe("Unknown command: 'chars:hello'");
  });
});

describe('secret keys: Sentry and GitHub secret scanning', () => {
  it.each([
    'password_confirmation',
    'passwordValue',
    'pass',
    'privateKeyPem',
    'sessionKey',
    'jwt',
    'otp',
    'totp',
    'passcode',
    'mysql_pwd',
    'stripetoken',
    'github_token',
    'X-CSRF-Token',
    'xsrfToken',
    'PHPSESSID',
    'connectionString',
    'card_number',
    'signing_key',
    'userpassword',
    'dbPass',
    'Proxy-Authorization',
    'accessKeyId',
  ])('%s is secret', (key) => {
    expect(isDefaultSecretKey(key)).toBe(true);
    const r = createRedactor();
    expect(r.redact({ [key]: 'v4lue-0f-secret' })).toEqual({ [key]: REDACTED });
  });

  it.each([
    'maxTokens',
    'tokens',
    'author',
    'cwd',
    'passed',
    'bypass',
    'sessionId',
    'keys',
    'key',
    'keyboard',
    'automationId',
    'compass',
    'oauthProvider',
  ])('%s is not', (key) => {
    expect(isDefaultSecretKey(key)).toBe(false);
  });

  it('splits keys into words', () => {
    expect(keyWords('privateKeyPEM')).toEqual(['private', 'key', 'pem']);
    expect(keyWords('XMLHttpRequest')).toEqual(['xml', 'http', 'request']);
    expect(keyWords('x-csrf_token.v2')).toEqual(['x', 'csrf', 'token', 'v2']);
  });
});

describe('secrets in JSON strings, escaped JSON and URLs', () => {
  it.each([
    ['a JSON string argument', '{"user":"bob","password":"hunter22"}'],
    ['escaped JSON', '{\\"user\\":\\"bob\\",\\"passwordValue\\":\\"hunter22\\"}'],
    ['escaped twice', '{\\\\\\"otp\\\\\\":\\\\\\"hunter22\\\\\\"}'],
    ['the server escape', '{\\u0022pass\\u0022:\\u0022hunter22\\u0022}'],
    ['a quote inside the value', '{"password":"hun\\"ter22"}'],
    ['a cut excerpt', '{"params":{"arguments":{"password_confirmation":"hunter22'],
    ['URL userinfo', 'connect to postgres://admin:hunter22@db.local:5432/app failed'],
    ['URL userinfo, escaped slashes', 'url: "https:\\/\\/bob:hunter22@example.com\\/x"'],
    ['a number under a key', '{"pin":1234,"jwt":hunter22}'],
  ])('%s', (_, text) => {
    const r = createRedactor();
    const out = r.redactArgs('launch', { body: text }) as { body: string };
    expect(out.body).not.toContain('hunter22');
    expect(out.body).not.toContain('ter22');
    expect(out.body).toContain(REDACTED);
  });

  it('keeps JSON quotes in place and the rest of the text', () => {
    const r = createRedactor();
    expect(r.scrubText('{"user":"bob","password":"hunter22","n":1}')).toBe(
      `{"user":"bob","password":"${REDACTED}","n":1}`,
    );
    expect(r.scrubText('https://bob:hunter22@example.com/x?y=1')).toBe(
      `https://bob:${REDACTED}@example.com/x?y=1`,
    );
    expect(r.scrubText('see https://example.com/a@b and mailto:x@y')).toBe(
      'see https://example.com/a@b and mailto:x@y',
    );
  });

  it('a value found in a JSON string is remembered for the rest (arguments are a trusted source)', () => {
    const r = createRedactor();
    r.redactArgs('launch', { body: '{"password":"Abc-12345"}' });
    expect(r.scrubText('echo Abc-12345')).toBe(`echo ${REDACTED}`);
  });

  it.each([
    ['GitHub', `ghp_${'a1B2'.repeat(9)}`],
    ['GitHub fine-grained', `github_pat_${'11ABCDEFG0'.repeat(5)}`],
    ['AWS', 'AKIAIOSFODNN7EXAMPLE'],
    ['Slack', 'xoxb-1234567890-abcdefghij'],
    ['Stripe', `sk_live_${'4eC39HqLyjWDarjtT1zdp7dc'}`],
    ['Google', `AIza${'SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6q'}`],
    ['JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'],
  ])('a %s token anywhere', (_, token) => {
    const r = createRedactor();
    const out = r.scrubText(`log: using ${token} now`);
    expect(out).toBe(`log: using ${REDACTED} now`);
  });

  it('a PEM private key block, whole or cut', () => {
    const r = createRedactor();
    const pem = '-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEA\\n-----END RSA PRIVATE KEY-----';
    expect(r.scrubText(`key: "${pem}" ok`)).toBe(`key: "${REDACTED}" ok`);
    expect(r.scrubText('x -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC')).toBe(
      `x ${REDACTED}`,
    );
    expect(r.scrubText('-----BEGIN CERTIFICATE-----\nMIIB')).toBe('-----BEGIN CERTIFICATE-----\nMIIB');
  });
});

describe('encoded echoes of remembered secrets', () => {
  const secret = 'S3cr3t/Pa ss+word';
  it.each([
    ['URL-encoded', `q=${encodeURIComponent(secret)}&x=1`],
    ['form-encoded', `q=${encodeURIComponent(secret).replaceAll('%20', '+')}&x=1`],
    ['lower-case %xx', `q=${encodeURIComponent(secret).toLowerCase()}`],
    ['base64', `data ${Buffer.from(secret).toString('base64')} end`],
    ['base64 of user:secret (Basic auth)', `Basic ${Buffer.from(`alice:${secret}`).toString('base64')}`],
    ['base64url', Buffer.from(`xy${secret}`).toString('base64url')],
    ['upper-cased', `LOGIN ${secret.toUpperCase()} FAILED`],
    ['lower-cased', `login ${secret.toLowerCase()} failed`],
    ['JSON-escaped twice', JSON.stringify(JSON.stringify({ s: secret }))],
  ])('%s', (_, text) => {
    const r = createRedactor();
    r.redactArgs('launch', { password: secret });
    const out = r.scrubText(text);
    expect(leaks(out, secret), out).toBe(false);
    expect(out).toContain(REDACTED);
  });

  it('echoForms lists the forms searched', () => {
    expect(echoForms('a"b+c d')).toEqual(
      expect.arrayContaining(['a"b+c d', 'a\\"b+c d', 'a\\u0022b\\u002Bc d', 'a%22b%2Bc%20d', 'a%22b%2Bc+d']),
    );
  });
});

describe('budgets: untrusted text cannot evict a remembered secret', () => {
  it('a flood of token=... in server output leaves an argument secret redacted', () => {
    const r = createRedactor();
    r.redactArgs('launch', { apiKey: 'Arg-Secret-42' });
    r.rememberSecret('Config-Secret-43');
    for (let i = 0; i < 3000; i++) r.redact({ detail: `retry token=Fl00d-${i}-xyzzy now` });
    expect(r.scrubText('Arg-Secret-42 and Config-Secret-43')).toBe(`${REDACTED} and ${REDACTED}`);
    // The output pool kept its newest values only.
    expect(r.scrubText('Fl00d-2999-xyzzy')).toBe(REDACTED);
    expect(r.scrubText('Fl00d-0-xyzzy')).toBe('Fl00d-0-xyzzy');
  });

  it('each source has a fixed budget', () => {
    const store = new SecretStore();
    for (let i = 0; i < 5000; i++) store.add(`output-value-${i}`, 'output');
    for (let i = 0; i < 1500; i++) store.add(`argument-value-${i}`, 'args');
    store.add('configured-value', 'config');
    // A long proxy run's MCP session tokens push out only older session tokens.
    for (let i = 0; i < 2000; i++) store.add(`mcp-session-${i}`, 'transport');
    // And its clients' bearer tokens push out only older tokens.
    for (let i = 0; i < 2000; i++) store.add(`Bearer-token-${i}`, 'header');
    expect(store.sizes()).toEqual({
      args: SECRET_BUDGET.args,
      config: 1,
      output: SECRET_BUDGET.output,
      transport: SECRET_BUDGET.transport,
      header: SECRET_BUDGET.header,
    });
    expect(store.scrub('configured-value mcp-session-1999', '#')).toBe('# #');
    expect(store.scrub('configured-value argument-value-1499', '#')).toBe('# #');
    // An output copy of a trusted value is kept: every pool forgets its oldest, so the trusted one may go first.
    expect(store.add('configured-value', 'output')).toBe(true);
  });

  it('1,000 remembered secrets are all found', () => {
    const r = createRedactor();
    const secrets = Array.from(
      { length: 1000 },
      (_, i) => `sekrit-${i.toString(36)}-${(i * 7919).toString(16)}`,
    );
    for (const s of secrets) r.rememberSecret(s);
    const text = secrets.filter((_, i) => i % 97 === 0).join(' | ');
    const out = r.scrubText(text);
    for (const s of secrets) expect(out).not.toContain(s);
  });
});

describe('evidence is not redacted by hostile text', () => {
  it('secret=Notepad in server output does not blank the window name, the code or the category', () => {
    const r = createRedactor();
    const hostile = {
      ok: false,
      error: {
        code: 'window-not-found',
        category: 'no-target',
        detail: 'secret=Notepad token=window-not-found password=no-target key=capture',
      },
    };
    const out = r.redact(hostile) as { error: { code: string; category: string; detail: string } };
    expect(out.error.code).toBe('window-not-found');
    expect(out.error.category).toBe('no-target');
    expect(out.error.detail).toBe(`secret=${REDACTED} token=window-not-found password=no-target key=capture`);
    const later = r.redact({
      ok: true,
      result: { windows: [{ title: 'Untitled - Notepad', className: 'Notepad' }] },
      tool: 'capture',
    });
    expect(JSON.stringify(later)).toContain('"className":"Notepad"');
    expect(JSON.stringify(later)).toContain('Untitled - Notepad');
  });

  it('a credential-looking value taught by server output is remembered, but never blanks a code', () => {
    const r = createRedactor();
    r.redact({ detail: 'token=Zz9-frame-all-black' });
    expect(r.scrubText('saw Zz9-frame-all-black')).toBe(`saw ${REDACTED}`);
    const out = r.redact({ ok: false, error: { code: 'Zz9-frame-all-black', category: 'capture-blank' } });
    expect(out).toEqual({ ok: false, error: { code: 'Zz9-frame-all-black', category: 'capture-blank' } });
  });

  it('a secret from the arguments is redacted even in a code field (no way around it)', () => {
    const r = createRedactor();
    r.redactArgs('launch', { password: 'leaky-code-123' });
    expect(r.redact({ ok: false, error: { code: 'leaky-code-123' } })).toEqual({
      ok: false,
      error: { code: REDACTED },
    });
  });
});

describe('chars: in documentation-like text', () => {
  it('ends at the quote that opened the command, so the rest of the line stays', () => {
    const text =
      'or `send_command chars:<path>` (chars: types the path LITERALLY; `C:\\x`, no doubling). Click the field';
    expect(scrubTypedCommands(text)).toBe(
      'or `send_command chars:[typed text: 6 chars]` (chars:[typed text: 27 chars]`C:\\x`, no doubling). Click the field',
    );
    const json = '{"instructions":"Type with send_command chars:<text>, then press enter."}';
    expect(scrubTypedCommands(json)).toBe(
      '{"instructions":"Type with send_command chars:[typed text: 25 chars]"}',
    );
  });
});

describe('keys after a backslash', () => {
  it('a JSON escape before the key, or a Windows path separator', () => {
    const r = createRedactor();
    expect(r.scrubText('line one\\npass=abcd1234 end')).toBe(`line one\\npass=${REDACTED} end`);
    expect(r.scrubText('C:\\token=abcd1234')).toBe(`C:\\token=${REDACTED}`);
  });
});

describe('values taught by server output, call after call', () => {
  it('each is redacted from the next call on; every form, any case, once 32 accumulate', () => {
    const r = createRedactor();
    for (let i = 0; i < 40; i++) {
      r.redact({ detail: `token=Taught-${i}-9xyz` });
      expect(r.scrubText(`again Taught-${i}-9xyz`)).toBe(`again ${REDACTED}`);
    }
    expect(r.scrubText('TAUGHT-1-9XYZ and taught-39-9xyz')).toContain(`${REDACTED} and`);
    expect(r.scrubText(encodeURIComponent('Taught-5-9xyz'))).toBe(REDACTED);
  });
});
