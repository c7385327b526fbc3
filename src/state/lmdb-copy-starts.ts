import { statSync } from 'node:fs';

/** A copy of a store's lmdb (LmdbStore.startCopy). */
export interface LmdbCopy {
  /** Settles when lmdb's copy has ended. */
  done: Promise<void>;
  /**
   * Whether the copy holds the state exactly as it was when the copy was started: no write to the
   * state reached lmdb before the copy's read transaction began.
   */
  exact: boolean;
}

/** While a copy is starting, the write buffer holds up to this many times `writeBufferEntries`. */
export const STARTING_COPY_BUFFER_FACTOR = 8;

/** A copy whose read transaction may not have begun: its file (empty until it has), and who to tell once it has. */
interface StartingCopy {
  file: string;
  copy: LmdbCopy;
  onBegun: (() => void) | undefined;
}

/**
 * A store's copies (LmdbStore.startCopy) whose read transaction may not have begun yet, which a
 * write to the state must wait for to keep them exact. lmdb's copy (mdb_env_copy2) writes into its
 * file only from inside that transaction, so a copy whose file has bytes has begun.
 */
export class LmdbCopyStarts {
  readonly #starting = new Set<StartingCopy>();

  get size(): number {
    return this.#starting.size;
  }

  /** A copy into `file` was asked for (exact until a write cannot wait for it); `onBegun` is told once it has begun or can no longer be exact. */
  add(file: string, onBegun: (() => void) | undefined): LmdbCopy {
    const copy: LmdbCopy = { done: Promise.resolve(), exact: true };
    this.#starting.add({ file, copy, onBegun });
    return copy;
  }

  /** The copy ended (or failed): it had begun, if it ever did; nothing more to wait for. */
  ended(copy: LmdbCopy): void {
    for (const starting of this.#starting) {
      if (starting.copy !== copy) continue;
      this.#starting.delete(starting);
      starting.onBegun?.();
    }
  }

  /** Whether every copy still starting has begun now (those that have stop being watched). */
  allBegun(): boolean {
    for (const starting of this.#starting) {
      if (fileSize(starting.file) === 0) return false;
      this.#starting.delete(starting);
      starting.onBegun?.();
    }
    return true;
  }

  /** A write to the state is about to reach lmdb: a copy that has not begun yet may see it (no longer exact). */
  beforeStateWrite(): void {
    if (this.#starting.size === 0 || this.allBegun()) return;
    for (const starting of this.#starting) {
      starting.copy.exact = false;
      this.#starting.delete(starting);
      starting.onBegun?.();
    }
  }
}

/** The size of `file`; 0 when it cannot be told (missing: a copy not begun yet). */
function fileSize(file: string): number {
  try {
    return statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  } catch {
    return 0;
  }
}
