/**
 * run.gif as the bundle keeps it: drawn only from images checked to be the ones the log recorded. It is drawn
 * from the start, before anything is checked (the zip writer hashes the images while the frames are drawn);
 * once a write of the zip has checked them, a GIF that showed one found not to be the log's (a same-size
 * replacement, a PNG that is not whole) is drawn again without it, as the zip is written again without it.
 */
import path from 'node:path';
import type { PlayerModel } from '../report/player/model.js';
import { checkImageFile, type ImageFile } from './images.js';
import { RUN_GIF_FILE, type RunGif, writeRunGif } from './run-gif.js';

export class CheckedRunGif {
  private drawn: Promise<RunGif | null>;
  private draws = 0;
  /** Images found to be the log's: by the zip writer, or read here. */
  private readonly good = new Set<string>();
  /** Images the GIF must not show: those the bundle left out as not the log's, and those found since. */
  private readonly bad: Set<string>;

  /**
   * Start drawing the GIF of `model` from `sessionDir` into `tmpDir`, without `notTheLogs` (the images listing
   * the session already left out: missing, another size, unreadable). `onDraw` is handed each drawing (the
   * caller waits for them before removing `tmpDir`); `warn` hears why a GIF could not be made.
   */
  constructor(
    private readonly sessionDir: string,
    private readonly model: PlayerModel,
    private readonly tmpDir: string,
    notTheLogs: Iterable<string>,
    private readonly images: ReadonlyMap<string, ImageFile>,
    private readonly onDraw: (drawing: Promise<unknown>) => void,
    private readonly warn: (problem: string) => void,
  ) {
    this.bad = new Set(notTheLogs);
    this.drawn = this.draw();
  }

  /** The GIF as it stands (null: none). */
  made(): Promise<RunGif | null> {
    return this.drawn;
  }

  /**
   * After a write of the zip: `checked` are the images its writer read, `faulty` those of them found not to be
   * the log's. Images the GIF shows that no write read are read here. Returns true when the GIF showed one
   * that is not the log's and is being drawn again without it (the zip must be written again).
   */
  async keepToChecked(checked: readonly ImageFile[], faulty: ReadonlySet<string>): Promise<boolean> {
    for (const img of checked) (faulty.has(img.path) ? this.bad : this.good).add(img.path);
    const gif = await this.drawn;
    if (!gif) return false;
    for (const key of gif.images) {
      if (this.good.has(key) || this.bad.has(key)) continue;
      const img = this.images.get(key);
      // An image the bundle did not list is not one it checked.
      const fault = img ? await checkImageFile(img) : { path: key };
      (fault ? this.bad : this.good).add(key);
    }
    if (!gif.images.some((key) => this.bad.has(key))) return false;
    this.drawn = this.draw();
    return true;
  }

  private draw(): Promise<RunGif | null> {
    // Each drawing into a file of its own: the last one's may still be open in the zip writer on Windows.
    const file = path.join(this.tmpDir, this.draws++ === 0 ? RUN_GIF_FILE : `run-${this.draws}.gif`);
    const drawing = writeRunGif(this.sessionDir, this.model, file, undefined, new Set(this.bad)).catch(
      (err: unknown) => {
        this.warn(`run.gif was not written: ${err instanceof Error ? err.message : String(err)}`);
        return null;
      },
    );
    this.onDraw(drawing);
    return drawing;
  }
}
