/** Estimating a bundle's zip size before writing it, for --max-bytes. */
import fs from 'node:fs';
import zlib from 'node:zlib';
import type { ZipEntry } from './zip.js';

/** Bytes per entry beyond its data: local header, data descriptor, central directory record, timestamps. */
const ENTRY_OVERHEAD = 30 + 46 + 24 + 16;
/** End-of-central-directory records (zip64 included) plus slack. */
const ZIP_OVERHEAD = 22 + 56 + 20 + 256;
/** Manifest bytes per listed file (path, size, sha256 and JSON punctuation), an upper bound. */
const MANIFEST_BYTES_PER_FILE = 200;

/** What one entry adds to a zip besides its data. */
export function entryOverhead(name: string): number {
  return ENTRY_OVERHEAD + 2 * Buffer.byteLength(name);
}

/**
 * An upper bound of the zip's size: stored entries by size, deflated ones by their real deflate size (same
 * zlib, same level), plus the manifest with `listed` files (it lists kept and dropped files alike).
 */
export async function estimateZipBytes(entries: readonly ZipEntry[], listed: number): Promise<number> {
  let total = ZIP_OVERHEAD + entryOverhead('x'.repeat(120)) + MANIFEST_BYTES_PER_FILE * listed + 1024;
  for (const entry of entries) {
    total += entryOverhead(entry.name);
    const level = entry.level ?? 6;
    if ('buffer' in entry.source || 'pending' in entry.source) {
      const data = 'buffer' in entry.source ? entry.source.buffer : await entry.source.pending;
      total += entry.compress ? zlib.deflateRawSync(data, { level }).length : data.length;
    } else {
      total += entry.compress ? await deflatedFileSize(entry.source.file, level) : entry.source.size;
    }
  }
  return total;
}

/** Deflated size of a file, streamed (it can be large). */
function deflatedFileSize(file: string, level: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const deflate = zlib.createDeflateRaw({ level });
    deflate.on('data', (chunk: Buffer) => {
      size += chunk.length;
    });
    deflate.on('end', () => resolve(size));
    deflate.on('error', reject);
    const input = fs.createReadStream(file);
    input.on('error', reject);
    input.pipe(deflate);
  });
}
