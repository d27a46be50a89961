/** How the page refers to an image file: a key (relative path in the session dir) and a link relative to the page. */
import path from 'node:path';
import { safeRelativePath } from '../../paths/naming.js';

/** An image file as the page refers to it. */
export interface ImageRef {
  /** Relative to the session dir, `/`-separated (the artifacts row's path). */
  key: string;
  /** Link relative to the page, each segment percent-encoded. */
  href: string;
  /** Absolute path of the file. */
  file: string;
  /** File name, for labels. */
  name: string;
}

/** `artifacts/<file>` becomes `<artifactBase><file>`; null for a path that would leave the session dir. */
export function imageRef(dir: string, relative: unknown, artifactBase: string): ImageRef | null {
  const key = safeRelativePath(relative);
  if (!key) return null;
  const inArtifacts = key.startsWith('artifacts/') ? key.slice('artifacts/'.length) : null;
  const tail = inArtifacts ?? key;
  const href = (inArtifacts !== null ? artifactBase : '') + tail.split('/').map(encodeURIComponent).join('/');
  return { key, href, file: path.join(dir, key), name: tail.split('/').pop() ?? tail };
}
