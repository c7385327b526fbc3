/** A read transaction of lmdb-js. */
export interface LmdbTransaction {
  done(): void;
}

/**
 * The state of a store at a checkpoint barrier (LmdbStore.barrier): lmdb's read transaction taken
 * once every write made before the barrier is in lmdb and before any write made after it is
 * (the store holds those back until then). The write buffer goes to lmdb in the flush thread, so
 * the transaction usually comes a moment after the barrier, while the task goes on: a snapshot
 * awaits {@link taken} (or, when it cannot wait, LmdbStore.settle takes it at once).
 */
export class LmdbBarrier {
  #transaction: LmdbTransaction | undefined;
  #released = false;
  #failure: Error | undefined;
  #resolve: () => void = () => {};
  readonly #onTaken: (() => void)[] = [];
  /** Settles once the transaction is taken (or the barrier released before, or failed). */
  readonly taken: Promise<void>;

  constructor() {
    this.taken = new Promise<void>((resolve) => {
      this.#resolve = resolve;
    });
  }

  /** The barrier's read transaction; undefined until taken (and after release). */
  get transaction(): LmdbTransaction | undefined {
    return this.#transaction;
  }

  /** Why the transaction can never be taken (the flush thread failed to write what came before it). */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** Whether the barrier is given up: nothing is taken for it any more. */
  get released(): boolean {
    return this.#released;
  }

  /** Runs `action` when the transaction is taken, before any later write reaches lmdb (at once when it is). */
  whenTaken(action: () => void): void {
    if (this.#transaction !== undefined) action();
    else if (!this.#released) this.#onTaken.push(action);
  }

  /** The store took the transaction: the barrier's state, exactly. */
  take(transaction: LmdbTransaction): void {
    if (this.#released) {
      transaction.done();
      return;
    }
    this.#transaction = transaction;
    for (const action of this.#onTaken.splice(0)) action();
    this.#resolve();
  }

  /** The writes before the barrier could not be written: {@link taken} settles, with {@link failure} set. */
  fail(error: Error): void {
    if (this.#released || this.#transaction !== undefined) return;
    this.#failure = error;
    this.#onTaken.length = 0;
    this.#resolve();
  }

  /** The snapshot is written or given up: the transaction ends (lmdb may reuse its pages). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#onTaken.length = 0;
    this.#transaction?.done();
    this.#transaction = undefined;
    this.#resolve();
  }
}
