import { randomBytes } from 'node:crypto';
import fs from 'node:fs';

/** Write `text` to `file` through a temp file and a rename, so readers never see half a document. */
export function writeFileAtomic(file: string, text: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.partial`;
  try {
    fs.writeFileSync(tmp, text, { flag: 'wx' });
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}
