/** Estimating a bundle's zip size before writing it, for --max-bytes. */
import fs from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
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
    const source = await entry.source;
    if ('none' in source) continue;
    if ('buffer' in source) {
      const data = source.buffer;
      total += entry.compress ? zlib.deflateRawSync(data, { level }).length : data.length;
    } else if ('stream' in source) {
      total += await deflatedSize(Readable.from(source.stream()), entry.compress ? level : null);
    } else if (!entry.compress) {
      total += source.size;
    } else {
      const input = fs.createReadStream(source.file);
      total += await deflatedSize(input, level);
    }
  }
  return total;
}

/** Size of a stream's bytes once deflated at `level` (or as they are, for null), streamed (it can be large). */
function deflatedSize(input: Readable, level: number | null): Promise<number> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const sink = level === null ? new PassThrough() : zlib.createDeflateRaw({ level });
    sink.on('data', (chunk: Buffer) => {
      size += chunk.length;
    });
    sink.on('end', () => resolve(size));
    sink.on('error', reject);
    input.on('error', reject);
    input.pipe(sink);
  });
}
