/**
 * The collector's URL may carry credentials (a userinfo password, an API key in the query): they are sent to
 * the collector and never stored, printed or bundled; the URL is shown with them as `***`.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { buildBundle } from '../../src/bundle/build.js';
import { createRecorder } from '../../src/record/index.js';
import { failureSummaryText } from '../../src/sessions/summarize.js';
import { readZip } from '../bundle/helpers.js';
import { events, sessionDirs } from '../record/helpers.js';
import { exportScope } from '../support/export-scope.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { BUNDLE_CLI, runNode } from '../support/programs.js';

const PASSWORD = 'UrlPw-5551';
const QUERY_KEY = 'QueryKey-4242';

const { tempRoot, receiver } = exportScope('mcec-otlp-url-');

/** `url` with a userinfo password and an API key in its query, and the same as it must be shown. */
function withCredentials(url: string): { secret: string; shown: string } {
  const u = new URL(url);
  const base = `${u.protocol}//otuser:PASSWORD@${u.host}${u.pathname}?api_key=QUERY`;
  return {
    secret: base.replace('PASSWORD', PASSWORD).replace('QUERY', QUERY_KEY),
    shown: base.replace('PASSWORD', '***').replace('QUERY', '***'),
  };
}

/** Every file under `dir`, raw bytes as latin1 text (the log, its WAL, thumbnails, sidecars). */
function everyFileText(dir: string): string {
  let text = '';
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) text += fs.readFileSync(path.join(entry.parentPath, entry.name)).toString('latin1');
  }
  return text;
}

/** Record one short session through `createRecorder` exporting to `url`; returns its dir and stderr. */
async function recordOne(
  root: string,
  url: string,
  otlp: Record<string, number> = {},
): Promise<{ dir: string; stderr: string }> {
  let stderr = '';
  const recorder = createRecorder({
    sessionsDir: root,
    otlp: { url, scheduledDelayMillis: 10, ...otlp },
    stderr: (line) => {
      stderr += `${line}\n`;
    },
  });
  const call = recorder.wrap(async (_tool: string, _args: Record<string, unknown>) => ({
    sessionId: 'url-1',
    ok: true,
    result: { windows: [] },
  }));
  await call('windows', { sessionId: 'url-1' });
  await call('windows', { sessionId: 'url-1' });
  await recorder.end('url-1', { passed: false, reason: 'to get a failure summary' });
  await recorder.close();
  return { dir: path.join(root, sessionDirs(root)[0]!), stderr };
}

describe('the collector URL with credentials', () => {
  it('sends them to the collector and stores the URL with *** in their place', async () => {
    const r = await receiver();
    const { secret, shown } = withCredentials(r.url);
    const root = tempRoot();
    const { dir } = await recordOne(root, secret);
    expect(r.spans.length).toBe(3);
    // The collector got the credentials: the userinfo as Basic auth (the query went with the path).
    expect(r.headers[0]!.authorization).toBe(`Basic ${Buffer.from(`otuser:${PASSWORD}`).toString('base64')}`);
    const [e] = events(dir, 'otlp-export');
    expect(e?.data).toMatchObject({ url: shown, spans: 3, exported: 3, dropped: 0, queued: 0 });
    const summary = await failureSummaryText(dir);
    expect(summary).toContain(`- OpenTelemetry export to ${shown}: 3 of 3 spans delivered\n`);
    for (const text of [everyFileText(root), summary]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(QUERY_KEY);
    }
  }, 30_000);

  it('says what was not delivered with the URL as shown when the collector is down', async () => {
    const gone = await startOtlpReceiver();
    await gone.close();
    const { secret, shown } = withCredentials(gone.url);
    const root = tempRoot();
    const { dir, stderr } = await recordOne(root, secret, {
      exportTimeoutMillis: 300,
      shutdownTimeoutMs: 1000,
    });
    expect(stderr).toContain(`OpenTelemetry export to ${shown}: 0 of 3 spans delivered`);
    const summary = await failureSummaryText(dir);
    expect(summary).toContain(`- OpenTelemetry export to ${shown}: 0 of 3 spans delivered, 3 not (`);
    for (const text of [stderr, everyFileText(root), summary]) {
      expect(text).not.toContain(PASSWORD);
      expect(text).not.toContain(QUERY_KEY);
    }
  }, 30_000);

  it('mcec-bundle export prints it with *** (text and --json)', async () => {
    const r = await receiver();
    const { secret, shown } = withCredentials(r.url);
    const root = tempRoot();
    const { dir } = await recordOne(root, r.url);
    const id = path.basename(dir).split('-').slice(2).join('-');
    const json = await runNode([BUNDLE_CLI, 'export', id, '--sessions', root, '--otlp', secret, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ url: shown, spans: 3, exported: 3, dropped: 0 });
    const text = await runNode([BUNDLE_CLI, 'export', id, '--sessions', root, '--otlp', secret]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`sent 3 of 3 spans from 1 session to ${shown}`);
    for (const out of [json.stdout, json.stderr, text.stdout, text.stderr]) {
      expect(out).not.toContain(PASSWORD);
      expect(out).not.toContain(QUERY_KEY);
    }
  }, 60_000);

  it("a bundle of a log an older recorder wrote (the URL stored as given) carries it with *** in the log's copy", async () => {
    const r = await receiver();
    const { secret, shown } = withCredentials(r.url);
    const root = tempRoot();
    const { dir } = await recordOne(root, r.url);
    // What a recorder before the fix stored: the URL as given, credentials and all (and an error quoting it).
    const db = new Database(path.join(dir, 'session.sqlite'));
    const row = db.prepare("SELECT id, detail FROM events WHERE kind = 'otlp-export'").get() as {
      id: number;
      detail: string;
    };
    // A long password: a row rewritten in place could leave its start in the page's freed space.
    const longPassword = `${PASSWORD}-${'x'.repeat(160)}`;
    const long = secret.replace(PASSWORD, longPassword);
    const old = { ...JSON.parse(row.detail), url: long, lastError: `connect ECONNREFUSED ${secret}` };
    db.prepare('UPDATE events SET detail = ? WHERE id = ?').run(JSON.stringify(old), row.id);
    db.close();
    expect(everyFileText(dir)).toContain(PASSWORD);

    const { bundle } = await buildBundle(dir, { output: path.join(root, 'old.zip') });
    const entries = await readZip(bundle);
    const zipText = entries.map((e) => e.data.toString('latin1')).join('\n');
    expect(zipText).not.toContain(PASSWORD);
    expect(zipText).not.toContain(QUERY_KEY);
    // The log's copy keeps the event, the URL shown as everywhere else.
    const logEntry = entries.find((e) => e.name.endsWith('/session.sqlite'))!;
    const copy = path.join(root, 'copy.sqlite');
    fs.writeFileSync(copy, logEntry.data);
    const kept = new Database(copy, { readonly: true });
    const stored = kept.prepare("SELECT detail FROM events WHERE kind = 'otlp-export'").get() as {
      detail: string;
    };
    kept.close();
    expect(JSON.parse(stored.detail)).toMatchObject({
      url: shown,
      lastError: `connect ECONNREFUSED ${shown}`,
    });
  }, 60_000);
});
