import type { CheckpointableKeyedStateBackend } from '../core/state/keyed-state-backend.ts';
import { HeapKeyedStateBackend } from './heap-keyed-state-backend.ts';
import type { KeyGroupRange } from './key-group-range.ts';
import { isLmdbBase, type LmdbBase, readLmdbBase } from './lmdb-base-format.ts';
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

/** An old subtask's chain: its full snapshot (bytes, or a base a restore streamed to a local file), then the changes on it, oldest first. */
export type KeyedChain = readonly (Uint8Array | LmdbBase)[];

/**
 * A keyed backend of `spec` with the state of `chains` (each old subtask's whose key groups overlap
 * the backend's: its full snapshot, then the changes on it, oldest first). A disk backend at the key
 * groups of one old subtask whose full snapshot is a disk backend's base (lmdb's file) opens that
 * file (made writable: lmdb-compacted-meta.ts; else loaded in key order, lmdb-base-load.ts) and
 * applies the changes, as Flink's RocksDB backend opens its SST files; otherwise (a
 * rescale, the heap backend, canonical snapshots) bases are converted to the canonical format and
 * every chain is read by key group.
 */
export async function restoreKeyedStateBackend(spec: KeyedStateBackendSpec, chains: readonly KeyedChain[]): Promise<CheckpointableKeyedStateBackend> {
  const { stateBackend, maxParallelism, keyGroupRange: range, operatorName, reinterpreted, dir } = spec;
  const [full, ...changes] = chains.length === 1 ? (chains[0] as KeyedChain) : [undefined];
  const base =
    full === undefined || (full instanceof Uint8Array && !isLmdbBase(full))
      ? undefined
      : full instanceof Uint8Array
        ? readLmdbBase(full, `the disk state backend's base for operator "${operatorName}"`)
        : full;
  if (
    stateBackend === 'disk' &&
    base !== undefined &&
    base.maxParallelism === maxParallelism &&
    base.keyGroupRange.start === range.start &&
    base.keyGroupRange.end === range.end
  ) {
    return restored(new LmdbKeyedStateBackend({ maxParallelism, keyGroupRange: range, operatorName, reinterpreted, dir, base }), changes as Uint8Array[]);
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
