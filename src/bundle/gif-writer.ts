/**
 * A GIF89a writer with bounded memory: one fixed 256-colour palette for every frame, each frame mapped to it
 * through a 15-bit lookup table, LZW-compressed and appended to the file as it is added, so memory holds one
 * frame whatever the count. The palette is a 6x6x6 colour cube, the exact colours a caller must keep (run.gif:
 * the overlay's marks and its background) and greys for the rest. No dithering: the output depends only on
 * the pixels given, so the same frames make the same bytes.
 */
import fs from 'node:fs';

/** An exact colour as [r, g, b]. */
export type Rgb = readonly [number, number, number];

const PALETTE_SIZE = 256;
const CUBE_LEVELS = 6;

/** A fixed palette and the lookup that maps a pixel to its nearest entry (an exact colour to itself). */
export class GifPalette {
  /** 768 bytes: r, g, b of each entry, as the GIF's global colour table. */
  readonly table: Buffer;
  private readonly packed: Int32Array;
  /** Per 15-bit bucket (5 bits each of r, g, b): the entry nearest the bucket's centre, -1 until needed. */
  private readonly nearest: Int16Array;
  /** Per bucket: the first entry whose colour falls in it, else -1; the next such entry after each. */
  private readonly firstInBucket: Int16Array;
  private readonly nextInBucket: Int16Array;

  /** `exact`: colours that must come out unchanged (at most 40); a pixel of any entry's colour keeps it. */
  constructor(exact: readonly Rgb[]) {
    const colours: number[] = [];
    const add = (r: number, g: number, b: number) => {
      const c = (r << 16) | (g << 8) | b;
      if (!colours.includes(c)) colours.push(c);
    };
    const step = 255 / (CUBE_LEVELS - 1);
    for (let r = 0; r < CUBE_LEVELS; r++)
      for (let g = 0; g < CUBE_LEVELS; g++)
        for (let b = 0; b < CUBE_LEVELS; b++) add(r * step, g * step, b * step);
    for (const [r, g, b] of exact) add(r, g, b);
    if (colours.length > PALETTE_SIZE - 8) throw new RangeError(`too many exact colours: ${exact.length}`);
    // Greys fill the rest, evenly spaced (screenshots are mostly greys).
    const greys = PALETTE_SIZE - colours.length;
    for (let i = 0; i < greys; i++) {
      const v = Math.round(((i + 0.5) * 255) / greys);
      colours.push((v << 16) | (v << 8) | v); // a grey the cube has already only wastes an entry
    }
    this.packed = Int32Array.from(colours);
    this.table = Buffer.alloc(PALETTE_SIZE * 3);
    colours.forEach((c, i) => {
      this.table[i * 3] = c >> 16;
      this.table[i * 3 + 1] = (c >> 8) & 255;
      this.table[i * 3 + 2] = c & 255;
    });
    this.firstInBucket = new Int16Array(1 << 15).fill(-1);
    this.nextInBucket = new Int16Array(PALETTE_SIZE).fill(-1);
    for (let i = PALETTE_SIZE - 1; i >= 0; i--) {
      const c = colours[i]!;
      const bucket = bucketOf(c >> 16, (c >> 8) & 255, c & 255);
      this.nextInBucket[i] = this.firstInBucket[bucket]!;
      this.firstInBucket[bucket] = i;
    }
    // Filled as buckets are met: a run's frames use a few thousand of the 32,768 (each costs a pass over the
    // 256 entries, 8.4 M steps for all of them, about 40 ms before the first frame otherwise).
    this.nearest = new Int16Array(1 << 15).fill(-1);
  }

  /** The entry nearest the centre of `bucket` (kept for the next pixel in it). */
  private nearestOf(bucket: number): number {
    const r = ((bucket >> 10) << 3) + 4;
    const g = (((bucket >> 5) & 31) << 3) + 4;
    const b = ((bucket & 31) << 3) + 4;
    let best = 0;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (let i = 0; i < PALETTE_SIZE; i++) {
      const c = this.packed[i]!;
      const dr = r - (c >> 16);
      const dg = g - ((c >> 8) & 255);
      const db = b - (c & 255);
      // Weighted roughly as the eye sees differences: green most, then blue, then red.
      const d = 2 * dr * dr + 4 * dg * dg + 3 * db * db;
      if (d < bestDistance) {
        bestDistance = d;
        best = i;
      }
    }
    this.nearest[bucket] = best;
    return best;
  }

  /** Map `pixels` (`channels` bytes each, r g b first) to entries into `into` (one byte per pixel). */
  indexInto(pixels: Uint8Array, channels: number, into: Uint8Array): void {
    const count = into.length;
    for (let p = 0, o = 0; p < count; p++, o += channels) {
      const r = pixels[o]!;
      const g = pixels[o + 1]!;
      const b = pixels[o + 2]!;
      const rgb = (r << 16) | (g << 8) | b;
      const bucket = bucketOf(r, g, b);
      let entry = this.firstInBucket[bucket]!;
      while (entry >= 0 && this.packed[entry] !== rgb) entry = this.nextInBucket[entry]!;
      if (entry < 0) {
        entry = this.nearest[bucket]!;
        if (entry < 0) entry = this.nearestOf(bucket);
      }
      into[p] = entry;
    }
  }
}

function bucketOf(r: number, g: number, b: number): number {
  return ((r >> 3) << 10) | ((g >> 3) << 5) | (b >> 3);
}

/** "#rrggbb" as [r, g, b]. */
export function rgbOf(hex: string): Rgb {
  const v = Number.parseInt(hex.slice(1), 16);
  return [v >> 16, (v >> 8) & 255, v & 255];
}

/** An animated GIF being written to a file, one frame at a time; every frame is `width` x `height`. */
export class GifFileWriter {
  private bytesWritten = 0;
  private frameCount = 0;
  private readonly indices: Uint8Array;
  private readonly lzw: LzwEncoder;

  private constructor(
    private readonly handle: fs.promises.FileHandle,
    private readonly palette: GifPalette,
    readonly width: number,
    readonly height: number,
  ) {
    this.indices = new Uint8Array(width * height);
    this.lzw = new LzwEncoder(width * height, FRAME_HEAD_BYTES);
  }

  /** Create (or truncate) `file` and write the header, the palette and "loop forever". */
  static async open(
    file: string,
    palette: GifPalette,
    width: number,
    height: number,
  ): Promise<GifFileWriter> {
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1)
      throw new RangeError(`GIF size must be whole pixels: ${width}x${height}`);
    if (width > 0xffff || height > 0xffff) throw new RangeError(`GIF too large: ${width}x${height}`);
    const handle = await fs.promises.open(file, 'w');
    const writer = new GifFileWriter(handle, palette, width, height);
    const head = Buffer.alloc(13);
    head.write('GIF89a', 0, 'latin1');
    head.writeUInt16LE(width, 6);
    head.writeUInt16LE(height, 8);
    head[10] = 0xf7; // a global colour table of 256 entries, 8 bits per primary
    const loop = Buffer.from([0x21, 0xff, 0x0b, ...Buffer.from('NETSCAPE2.0', 'latin1'), 3, 1, 0, 0, 0]);
    try {
      await writer.write(Buffer.concat([head, palette.table, loop]));
    } catch (err) {
      await handle.close();
      throw err;
    }
    return writer;
  }

  /** Bytes written so far: the file's size once closed. */
  get bytes(): number {
    return this.bytesWritten;
  }

  get frames(): number {
    return this.frameCount;
  }

  /** Append a frame of `pixels` (`channels` bytes per pixel, r g b first) shown for `delayMs`. */
  async addFrame(pixels: Uint8Array, channels: number, delayMs: number): Promise<void> {
    if (pixels.length < this.indices.length * channels)
      throw new RangeError(`a frame needs ${this.indices.length * channels} bytes, got ${pixels.length}`);
    this.palette.indexInto(pixels, channels, this.indices);
    const centis = Math.max(0, Math.min(0xffff, Math.round(delayMs / 10)));
    // The frame's bytes are written in one go from the encoder's buffer, reused frame after frame.
    const frame = this.lzw.encode(this.indices);
    // Graphic control: disposal "leave in place", no transparency, the delay in 1/100 s.
    frame.set([0x21, 0xf9, 4, 0x04, centis & 255, centis >> 8, 0, 0], 0);
    frame[8] = 0x2c; // image descriptor at 0,0, the frame's size, no local table, not interlaced
    frame.writeUInt32LE(0, 9);
    frame.writeUInt16LE(this.width, 13);
    frame.writeUInt16LE(this.height, 15);
    frame[17] = 0;
    frame[18] = 8; // LZW minimum code size
    await this.write(frame);
    this.frameCount++;
  }

  /** Write the trailer and close the file. */
  async close(): Promise<void> {
    try {
      await this.write(Buffer.from([0x3b]));
    } finally {
      await this.handle.close();
    }
  }

  /** Close without the trailer (the file is to be removed or written again). */
  async abandon(): Promise<void> {
    await this.handle.close();
  }

  private async write(data: Buffer): Promise<void> {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await this.handle.write(data, done, data.length - done);
      done += bytesWritten;
    }
    this.bytesWritten += data.length;
  }
}

/** Graphic control extension (8), image descriptor (10), LZW minimum code size (1). */
const FRAME_HEAD_BYTES = 19;
const CLEAR = 256;
const END = 257;
const FIRST_FREE = 258;
const MAX_CODES = 4096;

/**
 * GIF's variable-width LZW over 8-bit indices, output as the image data's 255-byte sub-blocks after `head`
 * bytes left for the caller. Its buffers are sized once for `pixels` per frame and reused.
 */
class LzwEncoder {
  /** Code of (prefix code << 8 | next index), 0 when absent (no real entry is below FIRST_FREE). */
  private readonly codeOf = new Uint16Array(MAX_CODES << 8);
  /** The keys set since the last clear, so a clear unsets only those. */
  private readonly keys = new Int32Array(MAX_CODES);

  /** The codes' bytes: at worst a 12-bit code per index, a clear every 3,838 codes, the first and the end. */
  private readonly codes: Buffer;
  /** `head` bytes, then the codes cut into sub-blocks (a length byte each), then the terminator. */
  private readonly frame: Buffer;

  constructor(
    private readonly pixels: number,
    private readonly head: number,
  ) {
    this.codes = Buffer.alloc(Math.ceil(((pixels + Math.ceil(pixels / 3838) + 4) * 12) / 8));
    this.frame = Buffer.alloc(head + this.codes.length + Math.ceil(this.codes.length / 255) + 1);
  }

  /** The frame buffer (valid until the next call): `head` bytes for the caller, then the image data. */
  encode(indices: Uint8Array): Buffer {
    if (indices.length !== this.pixels) throw new RangeError(`expected ${this.pixels} indices`);
    const out = this.codes;
    let length = 0;
    let bits = 0;
    let bitCount = 0;
    let codeSize = 9;
    let nextCode = FIRST_FREE;
    let keyCount = 0;
    const emit = (code: number) => {
      bits |= code << bitCount;
      bitCount += codeSize;
      while (bitCount >= 8) {
        out[length++] = bits & 255;
        bits >>>= 8;
        bitCount -= 8;
      }
    };
    const reset = () => {
      for (let i = 0; i < keyCount; i++) this.codeOf[this.keys[i]!] = 0;
      keyCount = 0;
      nextCode = FIRST_FREE;
    };
    emit(CLEAR);
    if (indices.length > 0) {
      let prefix = indices[0]!;
      for (let i = 1; i < indices.length; i++) {
        const index = indices[i]!;
        const key = (prefix << 8) | index;
        const known = this.codeOf[key]!;
        if (known !== 0) {
          prefix = known;
          continue;
        }
        emit(prefix);
        if (nextCode < MAX_CODES) {
          this.codeOf[key] = nextCode;
          this.keys[keyCount++] = key;
          nextCode++;
          // The decoder widens its codes one code later than it adds an entry.
          if (nextCode > 1 << codeSize && codeSize < 12) codeSize++;
        } else {
          emit(CLEAR);
          reset();
          codeSize = 9;
        }
        prefix = index;
      }
      emit(prefix);
    }
    emit(END);
    if (bitCount > 0) out[length++] = bits & 255;
    reset();
    // Cut into sub-blocks of at most 255 bytes, each after its length, then the zero-length terminator.
    const blocks = this.frame;
    let at = this.head;
    for (let from = 0; from < length; from += 255) {
      const n = Math.min(255, length - from);
      blocks[at++] = n;
      out.copy(blocks, at, from, from + n);
      at += n;
    }
    blocks[at++] = 0;
    return blocks.subarray(0, at);
  }
}
