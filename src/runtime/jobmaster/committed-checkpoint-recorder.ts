import type { CheckpointCoordinator } from '../../checkpoint/checkpoint-coordinator.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { storageFor } from '../../checkpoint/storage/open-checkpoint-storage.ts';
import type { RestoreInfo } from '../deployment/restore-info.ts';

/**
 * Records durably which checkpoints' transactions are all committed (the location's `_committed`,
 * {@link CheckpointStorage.markCommitted}, as savepoints get it when they are reported), so a
 * restore of one commits nothing again (restore-point.ts reads it). Committing again is harmless
 * while the broker knows the transactional ids, but a broker forgets an id once none of its
 * transactions moved for `transactional.id.expiration.ms` (7 days by default) and then answers
 * INVALID_PRODUCER_ID_MAPPING, which for a transaction still to commit is data loss: without the
 * record, a job stopped cleanly for a week could not start again.
 *
 * Written on the job master's thread, never the tasks': one small write per checkpoint, after every
 * task has acted on its completion (its two-phase-commit sinks committed up to it), one write at a
 * time. A crash before a write only means a restore commits again, as it would without it.
 */
export class CommittedCheckpointRecorder {
  readonly #storage: CheckpointStorage;
  readonly #coordinator: CheckpointCoordinator;
  readonly #warn: (line: string) => void;
  #queue: Promise<void> = Promise.resolve();
  /** The highest checkpoint id queued for a record, and the highest one recorded. */
  #queued = 0;
  #recorded = 0;

  constructor(storage: CheckpointStorage, coordinator: CheckpointCoordinator, warn: (line: string) => void) {
    this.#storage = storage;
    this.#coordinator = coordinator;
    this.#warn = warn;
  }

  /**
   * Checkpoint `checkpointId` completed: once every task has acted on its completion, it is
   * recorded, unless a later one completed meanwhile (its record says as much: completing a
   * checkpoint commits everything up to it; and this one may be deleted by then).
   */
  completed(checkpointId: number): void {
    const completed = this.#coordinator.latestCompleted;
    // Savepoints are recorded before they are reported (the job master's savepoint path).
    if (completed === undefined || completed.checkpointId !== checkpointId || completed.kind !== 'checkpoint') return;
    this.#coordinator.whenCommitted(checkpointId).then(
      () => {
        if (this.#coordinator.latestCompleted?.checkpointId === checkpointId) this.record(completed.location);
      },
      () => {}, // the attempt ended before every task acted on it: a restore commits it again
    );
  }

  /**
   * The sinks committed every transaction this snapshot holds: an attempt's tasks that restored it
   * are running (their sinks' start committed it before anything else), or every sink finished its
   * transactions from it at the job's end. Resolves when the records queued are written.
   */
  committedSnapshot(snapshot: RestoreInfo | undefined): Promise<void> {
    if (snapshot !== undefined && !snapshot.transactionsCommitted) {
      this.record({ kind: snapshot.kind ?? 'checkpoint', checkpointId: snapshot.checkpointId, path: snapshot.folder });
    }
    return this.settled();
  }

  /** Records that every transaction this location holds is committed (call only after the commits). */
  record(location: CheckpointLocation): void {
    if (location.checkpointId < this.#queued || location.checkpointId === this.#recorded) return;
    this.#queued = location.checkpointId;
    this.#queue = this.#queue
      .then(() => {
        // A later checkpoint completed while this waited: its record says as much, and this one's folder may be going.
        if ((this.#coordinator.latestCompleted?.checkpointId ?? 0) > location.checkpointId) return;
        return storageFor(location.path, this.#storage).markCommitted(location);
      })
      .then(
        () => {
          this.#recorded = Math.max(this.#recorded, location.checkpointId);
        },
        (error: unknown) => {
          // Nothing is lost: a restore of it commits its transactions again.
          this.#warn(
            `warning: could not record that the transactions of ${location.kind} ${location.checkpointId} are committed (${location.path}): ` +
              `${error instanceof Error ? error.message : String(error)} (a restore of it commits them again)`,
          );
        },
      );
  }

  /** Resolves when the records queued are written (or given up). */
  settled(): Promise<void> {
    return this.#queue;
  }
}
