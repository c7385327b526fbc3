import { WeirError } from '../core/errors/weir-error.ts';
import { releaseBytes } from '../core/heap/release-bytes.ts';

/**
 * What both keyed snapshot writers (SlicedSnapshot's canonical ones, LmdbBaseSnapshot) keep of a
 * snapshot being written: the pieces not handed out yet ({@link drain}: a storage writes them as
 * they come), or the whole snapshot ({@link result}) for a caller that drained nothing, and how it
 * ended (complete, or the error it failed with).
 */
export class SnapshotPieces {
  readonly #operatorName: string;
  #pieces: Uint8Array[] = [];
  /** Bytes pushed so far. */
  #length = 0;
  #drained = false;
  #result: Uint8Array | undefined;
  /** Every piece is written. */
  complete = false;
  /** What the snapshot failed with (undefined: it did not). */
  failure: unknown;

  constructor(operatorName: string) {
    this.#operatorName = operatorName;
  }

  /** Bytes of the snapshot so far. */
  get length(): number {
    return this.#length;
  }

  push(piece: Uint8Array): void {
    this.#pieces.push(piece);
    this.#length += piece.length;
  }

  /** The pieces written since the last call, in order (the caller owns them now); the snapshot is then never whole. */
  drain(): Uint8Array[] {
    this.#drained = true;
    const pieces = this.#pieces;
    this.#pieces = [];
    return pieces;
  }

  /** Drops the pieces not handed out (the snapshot was given up). */
  drop(): void {
    this.#pieces = [];
  }

  /** Throws the error the snapshot failed with, or CHECKPOINT_NOT_COMPLETED when it was given up or is still being written. */
  assertComplete(): void {
    if (this.failure !== undefined) throw this.failure;
    if (!this.complete) {
      throw new WeirError(
        'CHECKPOINT_NOT_COMPLETED',
        `operator "${this.#operatorName}": the keyed state snapshot is not written (given up, or still being written)`,
        {
          fault: 'internal',
          hint: 'take the snapshot only after step() returned true',
        },
      );
    }
  }

  /** The whole snapshot, once complete, when nothing was drained; the error it failed with, if it failed. */
  result(): Uint8Array {
    this.assertComplete();
    if (this.#drained) {
      throw new WeirError('CHECKPOINT_NOT_COMPLETED', `operator "${this.#operatorName}": the keyed state snapshot was drained piece by piece`, {
        fault: 'internal',
        hint: 'call either result() or drain(), never both',
      });
    }
    if (this.#result === undefined) {
      const out = new Uint8Array(Buffer.allocUnsafeSlow(this.#length).buffer, 0, this.#length);
      let position = 0;
      for (const piece of this.#pieces) {
        out.set(piece, position);
        position += piece.length;
        releaseBytes(piece); // copied: its memory goes now, not at a later collection
      }
      this.#pieces = [];
      this.#result = out;
    }
    return this.#result;
  }
}
