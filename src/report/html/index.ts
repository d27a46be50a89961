/** report.html: the self-contained timeline page of a session. */
export {
  DEFAULT_MAX_THUMBNAILS,
  DEFAULT_REPORT_HTML_MAX_BYTES,
  type ReportHtmlOptions,
  renderReportHtml,
  renderReportHtmlStream,
} from './render-html.js';
export { REPORT_HTML_TEMPLATE } from './template.js';
export { planThumbnails, type Thumbnail, type ThumbnailPlan, type ThumbnailRequest } from './thumbnails.js';
export { REPORT_HTML_FILE, writeReportHtml } from './write-report.js';
