import type { CheckpointLocation } from '../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointStorage } from '../checkpoint/storage/checkpoint-storage.ts';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { exchangePurgeIntervalMs, purgeExchangeRecords } from './exchange-purge.ts';
import type { PendingCheckpoint } from './task-checkpoint-record.ts';
import { discardEarlierOwners } from './task-storage.ts';

/** Earlier owners' folders are swept at this owner's first commit, and again every this many. */
const SWEEP_EVERY = 100;

/**
 * What a cluster task deletes once a checkpoint of its is committed: the previous checkpoint of
 * this owner (no longer its latest), the exchange records it has read (at most every
 * WEIR_EXCHANGE_PURGE_INTERVAL_MS, and at its final checkpoint: exchange-purge.ts), and after its
 * first commit the earlier owners' folders (fenced: nothing they hold is referenced), again every
 * SWEEP_EVERY checkpoints for what a zombie wrote meanwhile.
 */
export class TaskHousekeeping {
  #previous: CheckpointLocation | undefined;
  /** When this task last deleted the exchange records it has read. */
  #purgedAt = 0;

  /** Checkpoint `pending` of the task is committed, its `completed`th here (`ended`: its final one). */
  async committed(storage: CheckpointStorage, connections: ClusterConnections, pending: PendingCheckpoint, ended: boolean, completed: number): Promise<void> {
    const { offsets } = pending;
    const previous = this.#previous;
    this.#previous = pending.location;
    if (previous !== undefined) await storage.discard(previous).catch(() => {});
    if (offsets !== undefined && (ended || Date.now() - this.#purgedAt >= exchangePurgeIntervalMs())) {
      this.#purgedAt = Date.now();
      void purgeExchangeRecords(connections, offsets).catch(() => {}); // again at the next purge
    }
    if (completed % SWEEP_EVERY === 1) void discardEarlierOwners(storage);
  }
}
