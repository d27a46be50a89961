import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import {
  CYCLE,
  createRedactor,
  DEFAULT_SECRET_KEYS,
  REDACTED,
  scrubImageText,
  TOO_DEEP,
} from '../../src/redact/index.js';
import { SECRET_FRAGMENTS, SECRET_WORDS, secretKeyHint } from '../../src/redact/secret-keys.js';
import { mcecStringify } from '../contract/fixtures.js';
import { noisyPng, redPng } from '../support/images.js';

describe('secret keys', () => {
  it.each(DEFAULT_SECRET_KEYS)('%s is redacted, in any case and with - or _', (key) => {
    const r = createRedactor();
    const variants = [key, key.toUpperCase(), key.replace(/[-_]/g, ''), key.replace(/_/g, '-')];
    for (const k of variants) {
      const out = r.redact({ [k]: 'v4lue-of-secret', other: 'kept' }) as Record<string, unknown>;
      expect(out[k]).toBe(REDACTED);
      expect(out.other).toBe('kept');
    }
  });

  it('covers the usual spellings and suffixes', () => {
    const r = createRedactor();
    const input = {
      Password: 'p1',
      dbPassword: 'p2',
      githubToken: 't1',
      'X-Api-Key': 'k1',
      clientSecret: 's1',
      Authorization: 'Bearer abc',
      'Set-Cookie': 'sid=1',
      credentials: { user: 'bob', pass: 'builder' },
      maxTokens: 512,
      author: 'Ann',
      cwd: 'C:\\work',
      tokens: 3,
    };
    expect(r.redact(input)).toEqual({
      Password: REDACTED,
      dbPassword: REDACTED,
      githubToken: REDACTED,
      'X-Api-Key': REDACTED,
      clientSecret: REDACTED,
      Authorization: REDACTED,
      'Set-Cookie': REDACTED,
      credentials: REDACTED,
      maxTokens: 512,
      author: 'Ann',
      cwd: 'C:\\work',
      tokens: 3,
    });
  });

  it('empty, null and boolean values under secret keys stay (they reveal nothing)', () => {
    const r = createRedactor();
    expect(r.redact({ password: '', token: null, auth: false, secret: 0 })).toEqual({
      password: '',
      token: null,
      auth: false,
      secret: REDACTED,
    });
  });

  it('user keys (strings and regexes) are added to the defaults', () => {
    const r = createRedactor({ keys: ['pin', /^x-internal-/i] });
    expect(r.redact({ PIN: 1234, 'X-Internal-Thing': 'abc', 'x-public': 'ok', password: 'pw' })).toEqual({
      PIN: REDACTED,
      'X-Internal-Thing': REDACTED,
      'x-public': 'ok',
      password: REDACTED,
    });
  });

  it('user patterns are scrubbed from every string', () => {
    const r = createRedactor({ patterns: [/\b\d{3}-\d{2}-\d{4}\b/, /acct#\d+/g] });
    expect(r.redact({ note: 'ssn 123-45-6789 and 987-65-4321, acct#42', n: ['acct#7'] })).toEqual({
      note: `ssn ${REDACTED} and ${REDACTED}, ${REDACTED}`,
      n: [REDACTED],
    });
    expect(r.scrubText('acct#1 acct#2')).toBe(`${REDACTED} ${REDACTED}`);
  });
});

describe('remembered secrets', () => {
  it('a value seen under a secret key is scrubbed inside a command line elsewhere in the same args', () => {
    const r = createRedactor();
    const out = r.redactArgs('send_command', {
      command: 'net use \\\\srv\\share /user:bob hunter22',
      password: 'hunter22',
    });
    expect(out).toEqual({ command: `net use \\\\srv\\share /user:bob ${REDACTED}`, password: REDACTED });
  });

  it('and in everything stored later (envelopes, error details, JSON text)', () => {
    const r = createRedactor();
    r.redactArgs('launch', { path: 'app.exe', apiKey: 's3cr3t+key/"x"' });
    const env = { ok: false, error: { detail: 'login failed for key s3cr3t+key/"x"' } };
    expect(JSON.stringify(r.redact(env))).not.toContain('s3cr3t');
    // In JSON text, as the server escapes it (quotes as \" and + as \u002B).
    const text = mcecStringify(env);
    expect(text).toContain('s3cr3t\\u002Bkey');
    expect(r.scrubText(text)).not.toContain('s3cr3t');
    expect(r.scrubText(JSON.stringify(env))).not.toContain('s3cr3t');
  });

  it("a secret with & < > ' and non-ASCII is found in the server-escaped JSON text too", () => {
    const r = createRedactor();
    r.rememberSecret("pä&s<s>'w+rd");
    const text = mcecStringify({ detail: "bad password pä&s<s>'w+rd here" });
    expect(text).toContain('p\\u00E4\\u0026s');
    expect(r.scrubText(text)).toBe(mcecStringify({ detail: `bad password ${REDACTED} here` }));
  });

  it('rememberSecret: an Authorization header and its bare token', () => {
    const r = createRedactor();
    r.rememberSecret('Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig');
    expect(r.scrubText('Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig')).toBe(
      `Authorization: ${REDACTED}`,
    );
    expect(r.scrubText('token=eyJhbGciOiJIUzI1NiJ9.payload.sig;')).toBe(`token=${REDACTED};`);
  });

  it('rememberHeaderSecret: a pool of its own, the least recently seen forgotten first, never a configured secret', () => {
    const r = createRedactor({ secrets: ['Configured-Secret-1'] });
    r.rememberSecret('Later-Configured-2');
    r.rememberHeaderSecret('Bearer Steady-Token-0');
    for (let i = 0; i < 3000; i++) {
      r.rememberHeaderSecret(`Bearer Passing-Token-${i}`);
      if (i % 100 === 0) r.rememberHeaderSecret('Bearer Steady-Token-0'); // still in use: seen again
    }
    expect(r.scrubText('Configured-Secret-1 Later-Configured-2 Steady-Token-0 Passing-Token-2999')).toBe(
      `${REDACTED} ${REDACTED} ${REDACTED} ${REDACTED}`,
    );
    // The oldest passing token was forgotten (1,000s of tokens are bounded), the configured ones never.
    expect(r.scrubText('x Passing-Token-0 y')).toBe('x Passing-Token-0 y');
  });

  it('a value server output showed stays scrubbed after the header pool that also held it forgets it', () => {
    const r = createRedactor();
    r.rememberHeaderSecret('Bearer Echoed-Token-77');
    // The server shows it under a secret key: learned from output too, though a header already taught it.
    expect(r.redact({ password: 'Echoed-Token-77' })).toEqual({ password: REDACTED });
    for (let i = 0; i < 600; i++) r.rememberHeaderSecret(`Bearer Passing-Token-${i}`);
    expect(r.scrubText('x Passing-Token-0 y')).toBe('x Passing-Token-0 y'); // the header pool moved on
    expect(r.scrubText('the id Echoed-Token-77 again')).toBe(`the id ${REDACTED} again`);
  });

  it("a user's secret keys are assignments in text too, given as words or as a regex", () => {
    const words = createRedactor({ keys: ['ssn', 'vaultPin'] });
    expect(words.redact({ note: 'retry with ssn=987-65-4321 and VAULT_PIN: 4242 (not the pin)' })).toEqual({
      note: `retry with ssn=${REDACTED} and VAULT_PIN: ${REDACTED} (not the pin)`,
    });
    const regex = createRedactor({ keys: [/^pin$/i] });
    expect(regex.scrubText('PIN=4242; pinned=yes')).toBe(`PIN=${REDACTED}; pinned=yes`);
    // Without them, neither is a secret key.
    expect(createRedactor().scrubText('ssn=987-65-4321 pin=4242')).toBe('ssn=987-65-4321 pin=4242');
  });

  it('the quick test before the assignment scan lets every default secret key through', () => {
    const hint = secretKeyHint();
    for (const key of [...DEFAULT_SECRET_KEYS, ...SECRET_WORDS, ...SECRET_FRAGMENTS])
      expect([key, hint(`x ${key}=value`)]).toEqual([key, true]);
    expect(hint('the weather is fine today')).toBe(false);
  });

  it('secrets shorter than 4 chars are redacted under their key but not scrubbed elsewhere', () => {
    const r = createRedactor();
    expect(r.redact({ pwd: 'abc', note: 'abc is the alphabet' })).toEqual({
      pwd: REDACTED,
      note: 'abc is the alphabet',
    });
  });

  it('strings nested under a secret-keyed object are remembered too', () => {
    const r = createRedactor();
    r.redact({ credentials: { user: 'admin', password: 'Tr0ub4dor' } });
    expect(r.scrubText('retry with Tr0ub4dor')).toBe(`retry with ${REDACTED}`);
  });

  it('a longer secret containing a shorter one is replaced whole', () => {
    const r = createRedactor();
    r.rememberSecret('abcd');
    r.rememberSecret('abcd-efgh-ijkl');
    expect(r.scrubText('x abcd-efgh-ijkl y abcd')).toBe(`x ${REDACTED} y ${REDACTED}`);
  });
});

describe('a secret named by a sibling field: {name, value} pairs', () => {
  it('a header list, an env list, a tag list: the value under a secret name is redacted and remembered', () => {
    const r = createRedactor();
    const args = {
      headers: [
        { name: 'Authorization', value: 'Bearer HdrSplitTok9z' },
        { name: 'X-Api-Key', value: 'HdrSplitKey8y' },
        { name: 'Accept', value: 'application/json' },
      ],
      env: [{ key: 'DB_PASSWORD', value: 'EnvPw-4411' }],
      tags: [
        { Key: 'ApiKey', Value: 'TagKey-5522' },
        { Name: 'Owner', Value: 'ops' },
      ],
    };
    expect(r.redactArgs('fetch', args)).toEqual({
      headers: [
        { name: 'Authorization', value: REDACTED },
        { name: 'X-Api-Key', value: REDACTED },
        { name: 'Accept', value: 'application/json' },
      ],
      env: [{ key: 'DB_PASSWORD', value: REDACTED }],
      tags: [
        { Key: 'ApiKey', Value: REDACTED },
        { Name: 'Owner', Value: 'ops' },
      ],
    });
    expect(r.scrubText('sent HdrSplitTok9z, HdrSplitKey8y and EnvPw-4411')).toBe(
      `sent ${REDACTED}, ${REDACTED} and ${REDACTED}`,
    );
  });

  it("a UI element that is a secret field (by name or automation id) has its value redacted in MCEC's answers", () => {
    const r = createRedactor();
    const element = (name: string, automationId: string, value: string) => ({
      controlType: 'Edit',
      x: 1024,
      y: 368,
      width: 432,
      height: 28,
      name,
      automationId,
      className: 'Edit',
      value,
      children: [],
    });
    const tree = {
      ok: true,
      result: {
        tree: {
          controlType: 'Window',
          name: 'Sign in',
          children: [
            element('API token', 'ApiToken', 'Prefilled-Tok-42'),
            element('Field', 'PasswordBox', 'Prefilled-Pw-43'),
            element('File name:', '1001', 'notes-2026.txt'),
          ],
        },
      },
    };
    const out = r.redact(tree) as typeof tree;
    expect(out.result.tree.children.map((c) => c.value)).toEqual([REDACTED, REDACTED, 'notes-2026.txt']);
    expect(out.result.tree.children.map((c) => c.name)).toEqual(['API token', 'Field', 'File name:']);
    expect(r.scrubText('OCR: Prefilled-Tok-42')).toBe(`OCR: ${REDACTED}`);
  });

  it('names that merely look like secrets and values already hidden stay as they are', () => {
    const r = createRedactor();
    const args = {
      settings: [
        { name: 'keyboard', value: 'layout-us-intl' },
        { name: 'passage', value: 'The quick brown fox' },
        { key: 'maxTokens', value: 4096 },
      ],
      selector: { by: 'name', value: 'password-field' },
      noValue: { name: 'Password' },
    };
    expect(r.redactArgs('find', args)).toEqual(args);
    // An MCEC tool's own `value` argument is its element selector, whatever a stray `key` beside it says.
    const find = { window: 'Notepad', by: 'name', value: 'field', key: 'password' };
    expect(r.redactArgs('find', find)).toEqual(find);
    // A typing tool's nested field keeps its length marker (never taught as a secret).
    const form = { fields: [{ name: 'Password', value: 'Nested-Pw-77' }] };
    expect(r.redactArgs('browser_fill_form', form)).toEqual({
      fields: [{ name: 'Password', value: '[typed text: 12 chars]' }],
    });
    expect(r.scrubText('[typed text: 12 chars]')).toBe('[typed text: 12 chars]');
  });
});

describe('inline secrets in text', () => {
  const r = createRedactor();
  it.each([
    ['login --password hunter22 --user bob', `login --password ${REDACTED} --user bob`],
    ['https://h/api?token=abc123&page=2', `https://h/api?token=${REDACTED}&page=2`],
    ['Authorization: Bearer abc.def.ghi', `Authorization: ${REDACTED}`],
    ['PASSWORD="two words" next', `PASSWORD=${REDACTED} next`],
    ['tool -api-key=k-1 -v', `tool -api-key=${REDACTED} -v`],
    ['the token expired; password reset needed', 'the token expired; password reset needed'],
    ['keyboard: en-US, author=ann', 'keyboard: en-US, author=ann'],
    [`password: ${REDACTED}`, `password: ${REDACTED}`],
  ])('%s', (text, expected) => {
    expect(r.scrubText(text)).toBe(expected);
  });

  it('a value found inline is scrubbed from the rest of the same value and later ones', () => {
    const fresh = createRedactor();
    expect(fresh.redact({ a: 'user hunter99 logged in', b: 'cmd password=hunter99' })).toEqual({
      a: `user ${REDACTED} logged in`,
      b: `cmd password=${REDACTED}`,
    });
    expect(fresh.scrubText('again hunter99')).toBe(`again ${REDACTED}`);
  });

  it('a bare Bearer credential (no Authorization key before it) is redacted and remembered', () => {
    const fresh = createRedactor();
    expect(
      fresh.redactArgs('find', { value: 'Bearer BareBear3rTok9', note: 'curl -H "bearer x.Y-z_9~+/=="' }),
    ).toEqual({
      value: `Bearer ${REDACTED}`,
      note: `curl -H "bearer ${REDACTED}"`,
    });
    expect(fresh.scrubText('echo BareBear3rTok9')).toBe(`echo ${REDACTED}`);
    // Prose about bearer tokens, and words that are not credentials, stay.
    for (const text of [
      'Send a Bearer token in the header',
      'bearer authentication failed: Bearer <token> expected',
      'the Bearer-Token header',
    ])
      expect(fresh.scrubText(text)).toBe(text);
  });

  it("curl's -u/--user user:password: the password is redacted and remembered", () => {
    const fresh = createRedactor();
    expect(fresh.scrubText('curl -u admin:CurlUPw42 https://h')).toBe(`curl -u admin:${REDACTED} https://h`);
    expect(fresh.scrubText('curl --user=bob:S3cr!tzz https://h')).toBe(
      `curl --user=bob:${REDACTED} https://h`,
    );
    expect(fresh.scrubText('echo CurlUPw42')).toBe(`echo ${REDACTED}`);
    // A user and group, a user alone, a branch: not credentials.
    for (const text of ['docker run -u 1000:1000 img', 'mysql -u root db', 'chown -u www-data:www-data f'])
      expect(fresh.scrubText(text)).toBe(text);
  });

  it('can be turned off', () => {
    expect(createRedactor({ inlineSecrets: false }).scrubText('password=abc123')).toBe('password=abc123');
  });
});

describe('typed text', () => {
  const r = createRedactor();
  it.each([
    [
      'clipboard',
      { action: 'set', text: 'Dear Sir, ...' },
      { action: 'set', text: '[typed text: 13 chars]' },
    ],
    ['clipboard', { action: 'get' }, { action: 'get' }],
    // invoke's `value` is always MCEC's selector (by defaults to name), whatever the action: kept.
    ['invoke', { value: 'Password', action: 'setvalue' }, { value: 'Password', action: 'setvalue' }],
    ['invoke', { action: 'type', value: 'hi' }, { action: 'type', value: 'hi' }],
    ['invoke', { action: 'select', value: 'Option 2' }, { action: 'select', value: 'Option 2' }],
    [
      'invoke',
      { value: 'Password', action: 'setvalue', text: 'hunter2' },
      { value: 'Password', action: 'setvalue', text: '[typed text: 7 chars]' },
    ],
    ['invoke', { action: 'click' }, { action: 'click' }],
    // MCEC selects the element with {by, value}: that value is a selector, not typed text.
    ['invoke', { by: 'automationid', value: '1' }, { by: 'automationid', value: '1' }],
    ['invoke', { value: 'Save' }, { value: 'Save' }],
    [
      'invoke',
      { by: 'name', value: 'Search', action: 'setvalue', text: 'my query' },
      { by: 'name', value: 'Search', action: 'setvalue', text: '[typed text: 8 chars]' },
    ],
    ['send_command', { command: 'type Hello world' }, { command: 'type [typed text: 11 chars]' }],
    ['send_command', { command: 'SendKeys ^a{DEL}' }, { command: 'SendKeys [typed text: 7 chars]' }],
    [
      'send_command',
      { command: 'clipboard set secret plan' },
      { command: 'clipboard set [typed text: 11 chars]' },
    ],
    ['send_command', { command: 'capture window notepad' }, { command: 'capture window notepad' }],
    ['focus', { window: 'Notepad', text: 'abc' }, { window: 'Notepad', text: '[typed text: 3 chars]' }],
    ['type-text', { keys: 'hello' }, { keys: '[typed text: 5 chars]' }],
    ['click', { keys: ['ctrl', 'c'] }, { keys: ['ctrl', 'c'] }],
    ['find', { text: 'Save' }, { text: 'Save' }],
    // Tools MCEC does not have: their typed-input keys (any case, `-`/`_` ignored) hold typed text.
    ['chars', { chars: 'hunter2' }, { chars: '[typed text: 7 chars]' }],
    [
      'send-input',
      { window: 'Login', input: 'pw', Text_To_Type: 'abc' },
      { window: 'Login', input: '[typed text: 2 chars]', Text_To_Type: '[typed text: 3 chars]' },
    ],
    [
      'set_field',
      { field: 'Name', value: 'Bob', contentType: 'text/plain', keys: ['ctrl', 'a'] },
      { field: 'Name', value: '[typed text: 3 chars]', contentType: 'text/plain', keys: ['ctrl', 'a'] },
    ],
    ['echo', { message: 'hello', count: 2 }, { message: 'hello', count: 2 }],
    [
      'type_txt',
      { content: 'x', password: 'hunter2' },
      { content: '[typed text: 1 chars]', password: REDACTED },
    ],
    // Data keys (value, content, string, data) of a tool whose name does not say it types: kept as sent.
    ['write_file', { path: 'a.txt', content: 'file body' }, { path: 'a.txt', content: 'file body' }],
    ['search', { string: 'needle' }, { string: 'needle' }],
    ['get_config', { value: 'true', data: 'blob' }, { value: 'true', data: 'blob' }],
    ['set_config', { key: 'debug', value: 'true' }, { key: 'debug', value: 'true' }],
    ['reset_offset', { value: 'zero' }, { value: 'zero' }],
    ['hotkey_config', { value: 'ctrl+s' }, { value: 'ctrl+s' }],
    // ... typed when it does (type, keys, keystroke, fill, input, paste, send, setvalue, settext, setfield, chars, clipboard).
    ['set_value', { value: 'hunter2' }, { value: '[typed text: 7 chars]' }],
    ['send_keys', { value: 'hunter2' }, { value: '[typed text: 7 chars]' }],
    ['browser_fill', { value: 'hunter2' }, { value: '[typed text: 7 chars]' }],
    ['paste_clipboard', { data: 'abcd' }, { data: '[typed text: 4 chars]' }],
    ['write_file', { text: 'typed' }, { text: '[typed text: 5 chars]' }],
    // A typing tool MCEC does not have: typed input at any depth of its arguments.
    [
      'browser_fill_form',
      { fields: [{ name: 'Password', type: 'textbox', value: 'hunter2xyz' }] },
      { fields: [{ name: 'Password', type: 'textbox', value: '[typed text: 10 chars]' }] },
    ],
    [
      'send-input',
      { input: { text: 'Typed-Pw-1', window: 'Login' } },
      { input: { text: '[typed text: 10 chars]', window: 'Login' } },
    ],
    // ... not for other tools: nested data stays as sent, and known MCEC tools keep the top-level rule.
    ['write_file', { meta: { text: 'kept', value: 'kept' } }, { meta: { text: 'kept', value: 'kept' } }],
    [
      'wait-for',
      { selector: { name: 'OK', value: 'x1' }, text: 'Done' },
      { selector: { name: 'OK', value: 'x1' }, text: 'Done' },
    ],
    // Known tools that type nothing keep every argument, typed-input keys included.
    ['windows', { value: 'Notepad' }, { value: 'Notepad' }],
    ['wait-for', { selector: { name: 'OK' }, text: 'Done' }, { selector: { name: 'OK' }, text: 'Done' }],
  ])('%s %j', (tool, args, expected) => {
    const before = structuredClone(args);
    expect(r.redactArgs(tool, args)).toEqual(expected);
    expect(args).toEqual(before);
  });

  it("a plain server's data arguments are not scrubbed from its answer (fidelity)", () => {
    const fresh = createRedactor();
    const args = { path: 'cfg.json', content: 'true' };
    expect(fresh.redactArgs('write_file', args)).toEqual(args);
    const answer = { content: [{ type: 'text', text: '{"ok":true,"written":"cfg.json"}' }] };
    expect(fresh.redact(answer, { tool: 'write_file', args })).toEqual(answer);
    const list = { content: [{ type: 'text', text: 'Button "Save", Button "Cancel"' }] };
    expect(fresh.redact(list, { tool: 'search', args: { string: 'Save' } })).toEqual(list);
  });

  it('long typed text (over 4 KiB) is still scrubbed where echoed as sent and JSON-escaped once', () => {
    const fresh = createRedactor();
    const typed = `Line "one" caf\u00e9\n${'x'.repeat(5000)}`;
    const args = { input: typed };
    const answer = { content: [{ type: 'text', text: JSON.stringify({ echoed: typed }) }], raw: typed };
    const out = JSON.stringify(fresh.redact(answer, { tool: 'send-input', args }));
    expect(out).not.toContain('x'.repeat(100));
    expect(out).toContain(`[typed text: ${typed.length} chars]`);
  });

  it('nested typed input of a typing tool MCEC does not have is scrubbed from its answer', () => {
    const fresh = createRedactor();
    const args = { fields: [{ name: 'Password', value: 'Nested-Pw-77' }] };
    const answer = { content: [{ type: 'text', text: 'Filled Password with "Nested-Pw-77"' }] };
    expect(JSON.stringify(fresh.redact(answer, { tool: 'browser_fill_form', args }))).not.toContain(
      'Nested-Pw-77',
    );
  });

  it('keepTypedText keeps it (secrets are still redacted)', () => {
    const keep = createRedactor({ keepTypedText: true });
    expect(keep.redactArgs('clipboard', { text: 'hello there', token: 'tok-123' })).toEqual({
      text: 'hello there',
      token: REDACTED,
    });
  });

  it('typed words are not remembered as secrets; clipboard text is (it is pasted and read back)', () => {
    const fresh = createRedactor();
    fresh.redactArgs('send_command', { command: 'chars:common words' });
    fresh.redactArgs('focus', { text: 'other words' });
    expect(fresh.scrubText('common words, other words')).toBe('common words, other words');
    fresh.redactArgs('clipboard', { action: 'set', text: 'Clip-Secret 7' });
    expect(fresh.scrubText('pasted: Clip-Secret 7')).toBe(`pasted: ${REDACTED}`);
  });

  it('typed text that looks like a credential is remembered: read back later (get-text, a field value) it is scrubbed', () => {
    const fresh = createRedactor();
    fresh.redactArgs('send_command', { command: 'chars:Hunter2!Typed#Pw' });
    fresh.redactArgs('invoke', { value: 'ApiToken', action: 'setvalue', text: 'ApiTokVal_99zz88' });
    fresh.redactArgs('browser_type', { text: 'Nested-Pw-77' });
    const readBack = { ok: true, result: { text: 'Hello Hunter2!Typed#Pw\nApiTokVal_99zz88 Nested-Pw-77' } };
    expect(fresh.redact(readBack, { tool: 'get-text', args: { window: 'Notepad' } })).toEqual({
      ok: true,
      result: { text: `Hello ${REDACTED}\n${REDACTED} ${REDACTED}` },
    });
    // A file name, an e-mail address, a date typed: evidence, read back as they are (two kinds of character).
    fresh.redactArgs('send_command', { command: 'chars:report-2026.txt' });
    fresh.redactArgs('invoke', { value: 'UserName', action: 'setvalue', text: 'john.doe@contoso.com' });
    fresh.redactArgs('send_command', { command: 'chars:2026-12-07' });
    const kept = 'report-2026.txt - Notepad; signed in as john.doe@contoso.com on 2026-12-07';
    expect(fresh.scrubText(kept)).toBe(kept);
  });

  it("clipboard get's answer text is hidden with its length and scrubbed from the rest of the answer", () => {
    const fresh = createRedactor();
    const call = { tool: 'clipboard', args: { action: 'get' } };
    const env = { ok: true, sessionId: '5f19c9c01a3f', result: { text: 'Copied-Pw-8812!', length: 15 } };
    expect(fresh.redact(env, call)).toEqual({
      ...env,
      result: { text: '[typed text: 15 chars]', length: 15 },
    });
    // The same answer as MCEC's CallToolResult (envelope text escaped as MCEC escapes it).
    const block = { content: [{ type: 'text', text: mcecStringify(env) }], isError: false };
    expect(JSON.stringify(fresh.redact(block, call))).not.toContain('Copied-Pw-8812');
    // Remembered (it looks like a credential): a later echo in another call's output is scrubbed.
    expect(fresh.redact({ text: 'field shows Copied-Pw-8812!' })).toEqual({
      text: `field shows ${REDACTED}`,
    });
    // A plain word read from the clipboard is hidden where it stands but not remembered (evidence stays).
    const word = { ok: true, sessionId: '5f19c9c01a3f', result: { text: 'Save', length: 4 } };
    expect(fresh.redact(word, call)).toEqual({
      ...word,
      result: { text: '[typed text: 4 chars]', length: 4 },
    });
    expect(fresh.scrubText('button Save')).toBe('button Save');
    // keepTypedText keeps it.
    expect(createRedactor({ keepTypedText: true }).redact(env, call)).toEqual(env);
  });
});

describe('safety', () => {
  it('never mutates the input', () => {
    const r = createRedactor({ patterns: [/x+/] });
    const input = { password: 'pw12345', nested: [{ token: 't0k3n!!' }, 'xxx'], text: 'hi' };
    const snapshot = structuredClone(input);
    const out = r.redactArgs('clipboard', input);
    expect(input).toEqual(snapshot);
    expect(out).not.toBe(input);
  });

  it('10,000-deep nesting: deeper values become [too deep], no stack overflow', () => {
    const r = createRedactor();
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 10_000; i++) {
      const next: Record<string, unknown> = {};
      deep.a = next;
      deep = next;
    }
    const out = r.redact(root);
    let cur = out as Record<string, unknown>;
    let depth = 0;
    while (typeof cur.a === 'object') {
      cur = cur.a as Record<string, unknown>;
      depth++;
    }
    expect(cur.a).toBe(TOO_DEEP);
    expect(depth).toBeLessThan(1000);
    const arr: unknown[] = [];
    let a = arr;
    for (let i = 0; i < 10_000; i++) {
      const next: unknown[] = [];
      a.push(next);
      a = next;
    }
    expect(JSON.stringify(r.redact(arr))).toContain(TOO_DEEP);
  });

  it('cycles become [cycle]; shared (non-cyclic) references are copied', () => {
    const r = createRedactor();
    const shared = { v: 1 };
    const obj: Record<string, unknown> = { a: shared, b: shared };
    obj.self = obj;
    expect(r.redact(obj)).toEqual({ a: { v: 1 }, b: { v: 1 }, self: CYCLE });
  });

  it('non-JSON values are made storable', () => {
    const r = createRedactor();
    const out = r.redact({
      when: new Date(Date.UTC(2026, 0, 2)),
      buf: Buffer.from('abc'),
      big: 10n,
      fn: () => 1,
      err: new Error('boom'),
      set: new Set(['a']),
    });
    expect(out).toEqual({
      when: '2026-01-02T00:00:00.000Z',
      buf: '[binary: 3 bytes]',
      big: '10',
      fn: undefined,
      err: { name: 'Error', message: 'boom' },
      set: ['a'],
    });
  });

  it('a __proto__ key from JSON is copied as data, not as a prototype', () => {
    const r = createRedactor();
    const out = r.redact(JSON.parse('{"__proto__": {"password": "x1234"}, "a": 1}')) as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(JSON.stringify(out)).not.toContain('x1234');
  });

  it('a throwing getter does not throw out of redact', () => {
    const r = createRedactor();
    const evil = {
      get boom() {
        throw new Error('no');
      },
    };
    expect(() => r.redact({ evil })).not.toThrow();
  });

  it('primitives pass through (strings scrubbed)', () => {
    const r = createRedactor();
    r.rememberSecret('hunter22');
    expect(r.redact('pw hunter22')).toBe(`pw ${REDACTED}`);
    expect(r.redact(5)).toBe(5);
    expect(r.redact(null)).toBe(null);
    expect(r.redactArgs('x', undefined)).toBe(undefined);
  });
});

describe('image bytes that slipped through', () => {
  it('base64 PNG runs in text are replaced, in plain and server-escaped JSON text', async () => {
    const png = await redPng();
    const b64 = png.toString('base64');
    const text = `before ${b64} after`;
    expect(scrubImageText(text)).toMatch(/^before \[image bytes: ~\d+ bytes\] after$/);
    const escaped = mcecStringify({ base64: `${b64}+//+` });
    expect(scrubImageText(escaped)).not.toContain('iVBORw0KGgo');
    const r = createRedactor();
    expect(JSON.stringify(r.redact({ detail: `got data:image/png;base64,${b64}` }))).not.toContain(
      b64.slice(0, 20),
    );
  });

  it('a base64 WebP run in text is replaced too; a RIFF that is no WebP (a WAV) is left alone', async () => {
    const webp = (
      await sharp(await noisyPng(64, 64))
        .webp()
        .toBuffer()
    ).toString('base64');
    expect(scrubImageText(`before ${webp} after`)).toMatch(/^before \[image bytes: ~\d+ bytes\] after$/);
    const wav = Buffer.concat([Buffer.from('RIFF\x24\x08\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(96, 7)]);
    const text = `sound ${wav.toString('base64')} here`;
    expect(scrubImageText(text)).toBe(text);
  });

  it('text that merely contains a marker is untouched', () => {
    const t = `${'word '.repeat(20)} Qk is a tag and /9j/ too; iVBORw0KGgo but short`;
    expect(scrubImageText(t)).toBe(t);
  });
});
