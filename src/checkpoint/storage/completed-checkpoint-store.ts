import { WeirError } from '../../core/errors/weir-error.ts';
import { checkpointFolderName } from './checkpoint-folder-name.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import { type CheckpointMetadata, stateFilesOf } from './checkpoint-metadata.ts';
import type { CheckpointStorage, StoredCheckpointMetadata } from './checkpoint-storage.ts';

/** One location of a checkpoint storage, as `weir checkpoints list` shows it. */
export interface CheckpointSummary {
  checkpointId: number;
  /** Whether its metadata exists and reads. */
  completed: boolean;
  location: CheckpointLocation;
  /** Set when completed. */
  metadata?: CheckpointMetadata;
  /** All its files together. */
  sizeBytes: number;
  /** Why a location that holds metadata is not completed: the error reading it (corrupt, too new). */
  problem?: string;
}

/** Metadata that exists but cannot be read: such a checkpoint is skipped by retention, never deleted as if it were incomplete. */
const UNREADABLE = ['CHECKPOINT_METADATA_CORRUPT', 'CHECKPOINT_METADATA_TOO_NEW', 'CHECKPOINT_NOT_COMPLETED'];

/**
 * The completed checkpoints and savepoints of a storage (Flink's CompletedCheckpointStore), with
 * retention: which one a job resumes from, which ids were used, which are kept. It works on any
 * {@link CheckpointStorage} through its locations and metadata only.
 */
export class CompletedCheckpointStore {
  readonly #storage: CheckpointStorage;

  constructor(storage: CheckpointStorage) {
    this.#storage = storage;
  }

  /**
   * The completed checkpoint or savepoint with the highest id, or undefined when there is none: the
   * snapshot a job resumes from. Savepoints count: their transactions are committed when they are
   * reported, so resuming from an older checkpoint would read and commit those records again.
   * Locations without metadata are skipped (aborted or unfinished). A latest snapshot whose
   * metadata exists but does not read (corrupt, too new) is NOT skipped: restoring an older one
   * silently would replay data and roll back the sinks' state, so this throws, and the hint says
   * which folder to delete to fall back on purpose.
   */
  async latest(): Promise<StoredCheckpointMetadata | undefined> {
    const storage = this.#storage;
    const locations = [...(await storage.listLocations('checkpoint')), ...(await storage.listLocations('savepoint'))].sort(
      (a, b) => b.checkpointId - a.checkpointId,
    );
    for (const [position, location] of locations.entries()) {
      if (!(await storage.hasMetadata(location))) continue;
      try {
        return await storage.readMetadata(location.path);
      } catch (error) {
        if (!(error instanceof WeirError)) throw error;
        if (error.code === 'CHECKPOINT_NOT_COMPLETED') continue; // discarded meanwhile
        let previous: CheckpointLocation | undefined;
        for (const older of locations.slice(position + 1)) {
          if (await storage.hasMetadata(older)) {
            previous = older;
            break;
          }
        }
        const fallback =
          previous === undefined
            ? `delete ${location.path} to start without state (there is no older completed checkpoint)`
            : previous.kind === 'checkpoint'
              ? `delete ${location.path} to fall back to the previous completed checkpoint, ${checkpointFolderName(previous.checkpointId)}`
              : `delete ${location.path} to fall back to the previous completed savepoint, ${previous.path}`;
        throw new WeirError(error.code, `the latest checkpoint cannot be restored: ${error.message}`, {
          fault: error.fault,
          hint: error.code === 'CHECKPOINT_METADATA_TOO_NEW' ? `use a newer Weir, or ${fallback}` : fallback,
          cause: error,
        });
      }
    }
    return undefined;
  }

  /** The highest id of any checkpoint location (completed or not) and any savepoint; 0 when there is none. */
  async highestCheckpointId(): Promise<number> {
    let highest = 0;
    for (const kind of ['checkpoint', 'savepoint'] as const) {
      for (const location of await this.#storage.listLocations(kind)) highest = Math.max(highest, location.checkpointId);
    }
    return highest;
  }

  /** Every checkpoint location (and with `includeSavepoints` every savepoint), ascending by id. */
  async list(options: { includeSavepoints?: boolean } = {}): Promise<CheckpointSummary[]> {
    const storage = this.#storage;
    const locations = [...(await storage.listLocations('checkpoint')), ...(options.includeSavepoints === true ? await storage.listLocations('savepoint') : [])];
    locations.sort((a, b) => a.checkpointId - b.checkpointId || a.path.localeCompare(b.path));
    const summaries: CheckpointSummary[] = [];
    for (const location of locations) {
      const summary: CheckpointSummary = { checkpointId: location.checkpointId, completed: false, location, sizeBytes: await storage.sizeOf(location) };
      if (await storage.hasMetadata(location)) {
        try {
          const { location: _, ...metadata } = await storage.readMetadata(location.path);
          summary.completed = true;
          summary.metadata = metadata;
        } catch (error) {
          if (!(error instanceof WeirError)) throw error;
          summary.problem = error.message;
        }
      }
      summaries.push(summary);
    }
    return summaries;
  }

  /**
   * Keeps the `retained` newest completed checkpoints and deletes the older completed ones and every
   * incomplete checkpoint location below the newest completed one (incomplete ones above it may be
   * in progress and stay). Savepoints are never touched. Returns the deleted ids, ascending.
   *
   * Incremental checkpoints share files (Flink's SharedStateRegistry, as a mark and sweep over the
   * metadata): an older checkpoint whose folder holds a file that a kept checkpoint names keeps its
   * folder, but is no longer a completed checkpoint: its `_metadata` goes. Its metadata may name
   * files that no kept checkpoint names (each subtask starts a new full snapshot on its own, so a
   * subtask's chain in it can start in a folder the kept ones no longer need); kept whole as a
   * completed checkpoint, it would claim files that are deleted. A storage without
   * `discardMetadata` keeps such a checkpoint whole, with what its metadata names, transitively.
   * Each pass reads the kept metadata again, so a crash between deletions leaves nothing to
   * reconcile, and an incomplete location (never named by a completed checkpoint) goes as before.
   */
  async subsume(retained: number): Promise<number[]> {
    if (!Number.isSafeInteger(retained) || retained < 1) {
      throw new WeirError('INVALID_RETAINED_CHECKPOINTS', `checkpointing.retained: ${retained} is not a whole number of at least 1`, {
        hint: 'keep at least one completed checkpoint, for example 1 (the default) or 3',
      });
    }
    const storage = this.#storage;
    const locations = (await storage.listLocations('checkpoint')).reverse();
    const retainedIds = new Set<number>();
    const kept = new Set<number>();
    let newestCompleted: number | undefined;
    for (const location of locations) {
      if (retainedIds.size >= retained) break;
      const metadata = await this.#completedMetadata(location);
      if (metadata === undefined) continue;
      retainedIds.add(location.checkpointId);
      kept.add(location.checkpointId);
      for (const handle of stateFilesOf(metadata)) if (handle.checkpoint !== undefined) kept.add(handle.checkpoint);
      newestCompleted ??= location.checkpointId;
    }
    if (newestCompleted === undefined) return [];
    const discardMetadata = storage.discardMetadata?.bind(storage);
    if (discardMetadata === undefined) {
      // Newest first: a folder kept whole keeps what its own metadata names.
      for (const location of locations) {
        if (location.checkpointId >= newestCompleted || retainedIds.has(location.checkpointId) || !kept.has(location.checkpointId)) continue;
        const metadata = await this.#completedMetadata(location);
        for (const handle of metadata === undefined ? [] : stateFilesOf(metadata)) if (handle.checkpoint !== undefined) kept.add(handle.checkpoint);
      }
    }
    // Newest first: a checkpoint names only files of older ones, so whenever this stops (a crash
    // between two deletions), every completed checkpoint left still has all its files.
    const deleted: number[] = [];
    for (const location of locations) {
      if (location.checkpointId >= newestCompleted || retainedIds.has(location.checkpointId)) continue;
      if (!kept.has(location.checkpointId)) {
        await storage.discard(location);
        deleted.push(location.checkpointId);
      } else if (discardMetadata !== undefined && (await storage.hasMetadata(location))) {
        await discardMetadata(location);
      }
    }
    return deleted.reverse();
  }

  /** A location's metadata; undefined when it has none or it does not read (CHECKPOINT_METADATA_CORRUPT, ..._TOO_NEW, ..._NOT_COMPLETED). */
  async #completedMetadata(location: CheckpointLocation): Promise<CheckpointMetadata | undefined> {
    if (!(await this.#storage.hasMetadata(location))) return undefined;
    try {
      return await this.#storage.readMetadata(location.path);
    } catch (error) {
      if (error instanceof WeirError && UNREADABLE.includes(error.code)) return undefined;
      throw error;
    }
  }
}
