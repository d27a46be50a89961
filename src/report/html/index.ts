/** report.html: the self-contained timeline page of a session. */
export {
  DEFAULT_MAX_THUMBNAILS,
  DEFAULT_REPORT_HTML_MAX_BYTES,
  REPORT_HTML_TEMPLATE,
  type ReportHtmlOptions,
  renderReportHtml,
} from './render-html.js';
export { planThumbnails, type Thumbnail, type ThumbnailPlan, type ThumbnailRequest } from './thumbnails.js';
