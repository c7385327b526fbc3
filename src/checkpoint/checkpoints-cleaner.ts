import type { CheckpointLocation } from './storage/checkpoint-location.ts';
import type { CheckpointStorage } from './storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from './storage/completed-checkpoint-store.ts';

/**
 * Deletes aborted and subsumed checkpoints (Flink's CheckpointsCleaner), one at a time: two at once
 * trip over each other's folders. A failure here never fails the job: it is logged, and the next
 * subsume tries again.
 */
export class CheckpointsCleaner {
  readonly #storage: CheckpointStorage;
  readonly #log: (line: string) => void;
  #queue: Promise<void> = Promise.resolve();

  constructor(storage: CheckpointStorage, log: (line: string) => void) {
    this.#storage = storage;
    this.#log = log;
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
  }

  #enqueue(what: string, work: () => Promise<unknown>): void {
    this.#queue = this.#queue.then(work).then(
      () => {},
      (error: unknown) => this.#log(`checkpoint storage: ${what} failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  }
}
