import type { CheckpointableKeyedStateBackend } from '../core/state/keyed-state-backend.ts';
import { HeapKeyedStateBackend } from './heap-keyed-state-backend.ts';
import type { KeyGroupRange } from './key-group-range.ts';
import { isLmdbBase, readLmdbBase } from './lmdb-base-format.ts';
import { canonicalChains } from './lmdb-base-restore.ts';
import { LmdbKeyedStateBackend } from './lmdb-keyed-state-backend.ts';

/** The keyed backend a subtask restores: its kind, key groups and (the disk backend's) local working folder. */
export interface KeyedStateBackendSpec {
  stateBackend: 'heap' | 'disk';
  maxParallelism: number;
  keyGroupRange: KeyGroupRange;
  operatorName: string;
  reinterpreted: boolean;
  /** The disk backend's local working folder (emptied first: the state comes from the checkpoint); also where a base is converted. */
  dir: string;
}

/**
 * A keyed backend of `spec` with the state of `chains` (each old subtask's whose key groups overlap
 * the backend's: its full snapshot, then the changes on it, oldest first). A disk backend at the key
 * groups of one old subtask whose full snapshot is a disk backend's base (lmdb's file) opens that
 * file and applies the changes, as Flink's RocksDB backend opens its SST files; otherwise (a
 * rescale, the heap backend, canonical snapshots) bases are converted to the canonical format and
 * every chain is read by key group.
 */
export async function restoreKeyedStateBackend(spec: KeyedStateBackendSpec, chains: readonly Uint8Array[][]): Promise<CheckpointableKeyedStateBackend> {
  const { stateBackend, maxParallelism, keyGroupRange: range, operatorName, reinterpreted, dir } = spec;
  const only = chains.length === 1 ? (chains[0] as Uint8Array[]) : undefined;
  if (stateBackend === 'disk' && only !== undefined && only[0] !== undefined && isLmdbBase(only[0])) {
    const base = readLmdbBase(only[0], `the disk state backend's base for operator "${operatorName}"`);
    if (base.maxParallelism === maxParallelism && base.keyGroupRange.start === range.start && base.keyGroupRange.end === range.end) {
      return restored(new LmdbKeyedStateBackend({ maxParallelism, keyGroupRange: range, operatorName, reinterpreted, dir, base }), only.slice(1));
    }
  }
  const canonical = (await canonicalChains(chains, range, { folder: dir, operatorName, maxParallelism })).flat();
  const backend =
    stateBackend === 'disk'
      ? new LmdbKeyedStateBackend({ maxParallelism, keyGroupRange: range, operatorName, reinterpreted, dir })
      : new HeapKeyedStateBackend({ maxParallelism, keyGroupRange: range, operatorName, reinterpreted });
  return restored(backend, canonical);
}

/** `backend` with `snapshots` restored into it (disposed of when the restore fails). */
async function restored(backend: CheckpointableKeyedStateBackend, snapshots: readonly Uint8Array[]): Promise<CheckpointableKeyedStateBackend> {
  try {
    if (snapshots.length > 0) backend.restore(snapshots);
  } catch (error) {
    await backend.dispose?.();
    throw error;
  }
  return backend;
}
