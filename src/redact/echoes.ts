/**
 * The forms a secret takes when it is echoed: inside JSON text (standard escapes, escaped twice, and the
 * MCEC server's `\uXXXX` escapes), URL-encoded (`%XX` and form `+`), and base64 / base64url (the part of
 * the encoding that the secret alone decides, at each of the three byte alignments, so `user:secret`
 * encoded together is found too). Case is folded by the matcher, so upper- and lower-cased echoes match.
 */

/** Base64 runs shorter than this are not searched (too likely to occur by chance). */
const MIN_BASE64_CORE = 8;

/** What serverEscaped rewrites: an escaped quote, and `+ < > & ' \`` and every code unit from DEL up. */
const SERVER_ESCAPED = /\\"|[+<>&'`\u007f-\uffff]/g;

/**
 * JSON string text as the MCEC server writes it (System.Text.Json's default encoder, mcec-wire §4, §8):
 * `" + < > & ' \``, and non-ASCII as `\uXXXX` with upper-case hex. Input is already JSON-escaped text.
 */
export function serverEscaped(json: string): string {
  // One regex pass: building the text a char at a time took ~0.5 s per MB (typed text can be a file's content).
  return json.replace(SERVER_ESCAPED, (m) =>
    m.length === 2 ? '\\u0022' : `\\u${m.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`,
  );
}

/** `s` as it appears inside a JSON string. */
export function jsonEscaped(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/** The JSON-text forms of `s`: escaped once and twice, standard and as the server escapes. */
export function jsonForms(s: string): string[] {
  const once = jsonEscaped(s);
  const twice = jsonEscaped(once);
  const forms = [once, twice, serverEscaped(once), serverEscaped(twice)];
  // The server's `\"`-less form of the standard escape (`\u0022` only), as an older encoder wrote it.
  forms.push(serverEscaped(once).replaceAll('\\u0022', '\\"'));
  return forms;
}

/** The base64 and base64url runs that encoding `s` (alone or inside more bytes) always produces. */
export function base64Cores(s: string): string[] {
  const bytes = Buffer.from(s, 'utf8');
  const out: string[] = [];
  for (let off = 0; off < 3; off++) {
    const n = Math.floor((bytes.length - off) / 3) * 3;
    if (n <= 0) continue;
    const core = bytes.subarray(off, off + n).toString('base64');
    if (core.length < MIN_BASE64_CORE) continue;
    out.push(core, core.replaceAll('+', '-').replaceAll('/', '_'));
  }
  return out;
}

/** `s` URL-encoded (`%XX`) and form-encoded (`+` for spaces). */
export function urlForms(s: string): string[] {
  let enc: string;
  try {
    enc = encodeURIComponent(s);
  } catch {
    return []; // a lone surrogate: no URL form
  }
  // encodeURIComponent leaves !'()* alone; some encoders do not.
  const strict = enc.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return [enc, enc.replaceAll('%20', '+'), strict];
}

/** Every form of `s` to search for, `s` first, without duplicates. */
export function echoForms(s: string): string[] {
  const forms = new Set<string>([s]);
  for (const f of jsonForms(s)) forms.add(f);
  for (const f of urlForms(s)) forms.add(f);
  for (const f of base64Cores(s)) forms.add(f);
  return [...forms];
}
