import { setTimeout as sleep } from 'node:timers/promises';
import { WeirError } from '../core/errors/weir-error.ts';
import type { CheckpointLocation } from './storage/checkpoint-location.ts';
import type { CheckpointStorage } from './storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from './storage/completed-checkpoint-store.ts';

/** How often the discard of an aborted checkpoint whose metadata may have landed is tried. */
const ABORTED_DISCARD_TRIES = 4;

/**
 * Deletes aborted and subsumed checkpoints (Flink's CheckpointsCleaner), one at a time: two at once
 * trip over each other's folders. A failure here never fails the job: it is logged, and the next
 * subsume tries again. Except one: a checkpoint aborted while its metadata was written may have a
 * `_metadata` whose transactions the restart aborts; if it cannot be deleted, {@link settled}
 * fails for good rather than let a restart (or the next start) restore it.
 */
export class CheckpointsCleaner {
  readonly #storage: CheckpointStorage;
  readonly #log: (line: string) => void;
  readonly #retryDelayMs: number;
  #queue: Promise<void> = Promise.resolve();
  #fatal: WeirError | undefined;

  constructor(storage: CheckpointStorage, log: (line: string) => void, retryDelayMs = 500) {
    this.#storage = storage;
    this.#log = log;
    this.#retryDelayMs = retryDelayMs;
  }

  /**
   * Deletes a checkpoint aborted while its metadata was written, trying again with back-off; when
   * it still fails, {@link settled} rejects with ABORTED_CHECKPOINT_NOT_DISCARDED (never restarted).
   */
  discardAborted(location: CheckpointLocation): void {
    this.#queue = this.#queue.then(async () => {
      let last: unknown;
      for (let attempt = 0; attempt < ABORTED_DISCARD_TRIES; attempt++) {
        if (attempt > 0) await sleep(this.#retryDelayMs * 2 ** (attempt - 1));
        try {
          await this.#storage.discard(location);
          return;
        } catch (error) {
          last = error;
        }
      }
      const why = last instanceof Error ? last.message : String(last);
      this.#fatal ??= new WeirError(
        'ABORTED_CHECKPOINT_NOT_DISCARDED',
        `${location.kind} ${location.checkpointId} was aborted, but its _metadata (which may have landed) could not be deleted after ${ABORTED_DISCARD_TRIES} tries (${why}): a restore of it would find its transactions aborted`,
        { hint: `delete ${location.path} by hand, then start the job again (it restores the checkpoint before it)`, fault: 'external' },
      );
    });
  }

  /** Deletes an aborted checkpoint's (or savepoint's) location. */
  discard(location: CheckpointLocation): void {
    this.#enqueue(`discarding ${location.kind} ${location.checkpointId}`, () => this.#storage.discard(location));
  }

  /** Keeps the `retained` newest completed checkpoints and deletes what is older. */
  subsume(below: number, retained: number): void {
    this.#enqueue(`subsuming checkpoints below ${below}`, () => new CompletedCheckpointStore(this.#storage).subsume(retained));
  }

  /** Resolves when the queued deletions are done. */
  async settled(): Promise<void> {
    await this.#queue;
    if (this.#fatal !== undefined) throw this.#fatal;
  }

  #enqueue(what: string, work: () => Promise<unknown>): void {
    this.#queue = this.#queue.then(work).then(
      () => {},
      (error: unknown) => this.#log(`checkpoint storage: ${what} failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  }
}
