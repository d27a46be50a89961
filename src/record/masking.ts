/**
 * Masking while recording: the screen knowledge learned from every call (src/mask) and, for a call with
 * images, the masker that compaction and the host-file copier run on each image before it is written. One
 * per recorder: sessions of one recorder share one desktop, so a secret typed in one session is masked in
 * the captures of any other.
 */
import type { ImageMasker, ImageToMask, MaskOutcome } from '../artifacts/compact.js';
import { headerDimensions } from '../artifacts/image-file.js';
import { sniffImageFormat } from '../contract/image-bytes.js';
import type { Envelope } from '../contract/types.js';
import { frameOf, type MaskedCall } from '../mask/frame.js';
import { ScreenKnowledge } from '../mask/knowledge.js';
import { paintMasks } from '../mask/paint.js';
import { planMasks } from '../mask/plan.js';
import type { MaskMode, MaskOptions, MaskRule } from '../mask/types.js';

export class CaptureMasking {
  readonly mode: MaskMode;
  private readonly enabled: boolean;
  private readonly rules: readonly MaskRule[];
  private readonly knowledge: ScreenKnowledge;
  private readonly limitInputPixels: number | undefined;

  constructor(
    options: MaskOptions = {},
    secretKeys: ReadonlyArray<string | RegExp> = [],
    limitInputPixels?: number,
  ) {
    this.enabled = options.enabled !== false;
    this.mode = options.mode ?? 'before-write';
    this.rules = options.rules ?? [];
    this.limitInputPixels = limitInputPixels;
    this.knowledge = new ScreenKnowledge({
      typedText: options.typedText,
      secretFields: options.secretFields,
      secretKeys,
    });
  }

  /** Learn what a completed call shows of the screen and where it typed (after its own images were masked). */
  learn(call: MaskedCall, envelope: Envelope | undefined): void {
    if (this.enabled) this.knowledge.learn({ seq: call.seq, tool: call.tool, args: call.args, envelope });
  }

  /** The masker for a call's images, or undefined when nothing could apply (no secrets known, no rules). */
  maskerFor(call: MaskedCall, envelope: Envelope | undefined): ImageMasker | undefined {
    if (!this.enabled || (this.knowledge.empty && this.rules.length === 0)) return undefined;
    return (image) => this.mask(image, call, envelope);
  }

  private async mask(
    image: ImageToMask,
    call: MaskedCall,
    envelope: Envelope | undefined,
  ): Promise<MaskOutcome> {
    const format = sniffImageFormat(image.bytes);
    const dims = format ? headerDimensions(image.bytes, format) : undefined;
    const ownOnly = image.role === 'lastObservation' || image.role === 'host-observation';
    const frame = frameOf(image.container, call, envelope, ownOnly);
    if (!dims)
      return { refuse: 'not stored: the image may show a secret and its size could not be read to mask it' };
    const masked = planMasks(frame, dims, this.knowledge, this.rules);
    if (masked.length === 0) return {};
    if (this.mode === 'on-export') return { masked, onExport: true };
    const painted = await paintMasks(
      image.bytes,
      format,
      masked.map((m) => m.rect),
      this.limitInputPixels,
    );
    if ('error' in painted)
      return { masked, refuse: `not stored: ${painted.error} (it needed ${masked.length} mask(s))` };
    return { bytes: painted.bytes, masked };
  }
}
