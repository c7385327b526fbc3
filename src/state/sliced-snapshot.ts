import { WeirError } from '../core/errors/weir-error.ts';
import type { AsyncKeyedStateSnapshot } from '../core/state/keyed-state-backend.ts';

/**
 * What both backends' asynchronous snapshot writers share (KeyedStateSnapshotWriter for the heap,
 * LmdbSnapshotWriter for the disk): written slice by slice between the task's turns, each
 * {@link step} going on until its time budget is spent; a failure gives the snapshot up (releasing
 * what it held) and is what {@link result} throws. A subclass writes in {@link advance} and frees
 * what it holds in {@link free}, once.
 */
export abstract class SlicedSnapshot implements AsyncKeyedStateSnapshot {
  readonly #operatorName: string;
  #result: Uint8Array | undefined;
  #failure: unknown;
  #ended = false;

  constructor(operatorName: string) {
    this.#operatorName = operatorName;
  }

  /** Whether the snapshot is written (or given up). */
  get done(): boolean {
    return this.#ended;
  }

  /** Writes on for about `budgetMs`; returns whether the snapshot is complete. A state that cannot be serialized throws (and gives the snapshot up). */
  step(budgetMs: number): boolean {
    if (this.#ended) return true;
    const until = performance.now() + budgetMs;
    try {
      do {
        const written = this.advance(until);
        if (written !== undefined) {
          this.#result = written;
          this.release();
          return true;
        }
      } while (performance.now() < until);
    } catch (error) {
      this.#failure = error;
      this.release();
      throw error;
    }
    return false;
  }

  /** Writes what is left at once (a synchronous snapshot, or a new barrier while this one is pending). */
  runToEnd(): void {
    while (!this.step(Number.POSITIVE_INFINITY));
  }

  /** The snapshot, once complete; the error it failed with, if it failed. */
  result(): Uint8Array {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#result === undefined) {
      throw new WeirError(
        'CHECKPOINT_NOT_COMPLETED',
        `operator "${this.#operatorName}": the keyed state snapshot is not written (given up, or still being written)`,
        { fault: 'internal', hint: 'call result() only after step() returned true' },
      );
    }
    return this.#result;
  }

  /** Gives the snapshot up (or it is written): what it holds is freed, once. */
  release(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.free();
  }

  /** Writes a piece; returns the whole snapshot once it is complete (`until`: the slice's end, for long pieces). */
  protected abstract advance(until: number): Uint8Array | undefined;

  /** Frees what the snapshot holds (called once, by {@link release}). */
  protected abstract free(): void;
}
