/** Write report.html into a session dir (beside artifacts/, so its image links work there too). */
import path from 'node:path';
import { SessionReader } from '../../store/session-reader.js';
import { expectNonEmptyString } from '../../util/expect.js';
import { buildSummary } from '../summary.js';
import { writeFileAtomic } from '../write-atomic.js';
import { checkReportHtmlOptions, type ReportHtmlOptions, renderReportHtml } from './render-html.js';

/** The page's file name, in a session dir and in a bundle's top folder. */
export const REPORT_HTML_FILE = 'report.html';

/** Render the session in `dir` and write `<dir>/report.html` (atomically: temp file, then rename); returns its path. */
export async function writeReportHtml(dir: string, options: ReportHtmlOptions = {}): Promise<string> {
  expectNonEmptyString(dir, 'dir');
  checkReportHtmlOptions(options);
  const reader = SessionReader.open(dir);
  let html: string;
  try {
    html = await renderReportHtml(reader, await buildSummary(reader), options);
  } finally {
    reader.close();
  }
  const file = path.join(dir, REPORT_HTML_FILE);
  writeFileAtomic(file, html);
  return file;
}
