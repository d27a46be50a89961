/** Names and server-authored prose are not secrets: the protocol's structure survives redaction, secrets do not. */
import { describe, expect, it } from 'vitest';
import { createRedactor, REDACTED } from '../../src/redact/index.js';

const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLXZhbHVl';

/** A tools/list result holding one tool: end-session as MCEC lists it. */
function toolsList(description: string, tokenDescription = 'The token returned by provision-session') {
  return {
    tools: [
      {
        name: 'end-session',
        description,
        inputSchema: {
          type: 'object',
          properties: {
            sessionId: { type: 'string', description: 'The sessionId returned by provision-session' },
            token: { type: 'string', description: tokenDescription },
            credentials: {
              type: 'object',
              properties: { password: { type: 'string' } },
              anyOf: [{ properties: { apiKey: { type: 'string' } } }],
            },
          },
          required: ['sessionId', 'token'],
        },
        annotations: { title: 'credential: teardown' },
      },
    ],
  };
}

describe('JSON Schema property names are names', () => {
  it('a schema under a secret-looking key (token, credentials, password, apiKey) stays a schema', () => {
    const input = toolsList('Tear down a provisioned session.');
    expect(createRedactor().redact(input)).toEqual(input);
  });

  it('a value under the same key outside a schema is still a secret', () => {
    const r = createRedactor();
    expect(r.redact({ properties: { token: 'abc123-live-value' } })).toEqual({
      properties: { token: REDACTED },
    });
    // Inside a schema, a string where a subschema belongs is still redacted (and remembered).
    const odd = { name: 't', inputSchema: { type: 'object', properties: { token: 'Tok-9912-live' } } };
    expect(r.redact(odd)).toEqual({
      name: 't',
      inputSchema: { type: 'object', properties: { token: REDACTED } },
    });
    expect(r.scrubText('later: Tok-9912-live')).toBe(`later: ${REDACTED}`);
  });

  it("a tool's name and its required argument names stay as they are", () => {
    const r = createRedactor({ secrets: ['end-session'] });
    const out = r.redact(toolsList('x')) as ReturnType<typeof toolsList>;
    expect(out.tools[0]!.name).toBe('end-session');
    expect(out.tools[0]!.inputSchema.required).toEqual(['sessionId', 'token']);
  });
});

describe('server-authored prose keeps its words', () => {
  it('a tool description: "credential: HTTP requests" and a `chars:` are sentences, not a secret and typing', () => {
    const description =
      "The token is the session credential: HTTP requests must send 'Authorization: Bearer <token>'. " +
      'Type with send_command chars:<text> (chars: types literal text; --token value is shown once).';
    const input = toolsList(description, 'The token (the teardown credential: keep it)');
    expect(createRedactor().redact(input)).toEqual(input);
  });

  it('initialize instructions, serverInfo and the commandAccess note', () => {
    const note = 'Raw send_command built-ins (chars:, winr, mouse:, VK_* keys, key chords) start gated.';
    const init = {
      protocolVersion: '2025-06-18',
      capabilities: { tools: {} },
      serverInfo: { name: 'MCEC', version: '3.0.29', title: 'MCEC: password: managed by the operator' },
      instructions: `Type with \`chars:<text>\`; secret: never paste it. ${note}`,
      commandAccess: { enabledTools: ['capture'], note },
    };
    expect(createRedactor().redact(init)).toEqual(init);
    // session-start's envelope carries the same block.
    const env = { ok: true, sessionId: '5f19c9c01a3f', result: { commandAccess: { note } } };
    expect(createRedactor().redact(env)).toEqual(env);
  });

  it('a real secret in prose is still found: credential formats, remembered secrets, key=value', () => {
    const r = createRedactor({ secrets: ['Operator-Pw-4471'] });
    const out = r.redact(
      toolsList(
        `Use ${GITHUB_TOKEN} to push; password=hunter2x; the default is Operator-Pw-4471.`,
        `Example: ${JWT}`,
      ),
    ) as ReturnType<typeof toolsList>;
    const text = JSON.stringify(out);
    for (const secret of [GITHUB_TOKEN, JWT, 'hunter2x', 'Operator-Pw-4471'])
      expect(text).not.toContain(secret);
    expect(out.tools[0]!.description).toBe(
      `Use ${REDACTED} to push; password=${REDACTED}; the default is ${REDACTED}.`,
    );
    // The same text's sentences stay.
    const init = {
      protocolVersion: '1',
      serverInfo: { name: 'x' },
      instructions: 'The credential: Operator-Pw-4471',
    };
    expect((r.redact(init) as { instructions: string }).instructions).toBe(`The credential: ${REDACTED}`);
  });

  it('the same words outside prose keep the data rules (an error detail, a window title)', () => {
    const r = createRedactor();
    const env = {
      ok: false,
      error: {
        code: 'x',
        category: 'internal',
        detail: "Unknown command: 'chars:hunter2'",
        title: 'credential: abc123',
      },
    };
    const out = r.redact(env) as typeof env;
    expect(out.error.detail).toBe("Unknown command: 'chars:[typed text: 7 chars]'");
    expect(out.error.title).toBe(`credential: ${REDACTED}`);
  });
});

describe("MCP's progress token is an id, not a credential", () => {
  it('a progress notification and a request _meta keep their progressToken; a token elsewhere is a secret', () => {
    const redactor = createRedactor();
    const notification = {
      method: 'notifications/progress',
      params: { progressToken: 11, progress: 1, total: 4, message: 'step 1' },
    };
    const named = { method: 'notifications/progress', params: { progressToken: 'walk-7f3a', progress: 2 } };
    const request = {
      jsonrpc: '2.0',
      id: 3,
      method: 'resources/read',
      params: { uri: 'demo://x', _meta: { progressToken: 3 } },
    };
    expect(redactor.redact(notification)).toEqual(notification);
    expect(redactor.redact(named)).toEqual(named);
    expect(redactor.redact(request)).toEqual(request);
    // The key alone is not enough: outside those shapes, data keeps the data rules.
    expect(redactor.redact({ progressToken: 'abc123', user: 'ada' })).toEqual({
      progressToken: REDACTED,
      user: 'ada',
    });
    // A credential format in a progress token is still a secret.
    expect(
      redactor.redact({
        method: 'notifications/progress',
        params: { progressToken: GITHUB_TOKEN, progress: 1 },
      }),
    ).toEqual({ method: 'notifications/progress', params: { progressToken: REDACTED, progress: 1 } });
    // And none of the ids was learned as a secret (a later "11" or "walk-7f3a" stays).
    expect(redactor.redact({ text: 'call 11 of walk-7f3a' })).toEqual({ text: 'call 11 of walk-7f3a' });
  });
});

describe("an elicitation's requestedSchema is a schema", () => {
  it('a property named token or password stays a schema; the values the user typed are secrets', () => {
    const redactor = createRedactor();
    const requestedSchema = {
      type: 'object',
      properties: {
        token: { type: 'string', title: 'Token', description: 'A personal access token: paste it here' },
        password: { type: 'string', minLength: 8 },
      },
      required: ['token'],
    };
    const exchange = {
      method: 'elicitation/create',
      id: 2,
      params: { message: 'Sign in to continue', requestedSchema },
      result: { action: 'accept', content: { token: GITHUB_TOKEN, password: 'hunter2-hunter2' } },
    };
    expect(redactor.redact(exchange)).toEqual({
      ...exchange,
      result: { action: 'accept', content: { token: REDACTED, password: REDACTED } },
    });
    // A string where a subschema belongs is data, as in a tool's inputSchema.
    const forged = { message: 'x', requestedSchema: { properties: { token: 'abc123' } } };
    expect(redactor.redact(forged)).toEqual({
      message: 'x',
      requestedSchema: { properties: { token: REDACTED } },
    });
  });
});
