import { type KeyGroupRange, keyGroupRangeIntersection, keyGroupRangeSize } from './key-group-range.ts';
import { isLmdbBase, type LmdbBase, readLmdbBase } from './lmdb-base-format.ts';
import { LmdbKeyedStateBackend } from './lmdb-keyed-state-backend.ts';

/** Where a restore converts bases, and what it names in errors. */
export interface LmdbBaseConversion {
  /** A local working folder for lmdb (a disk backend's, or one of its own). */
  folder: string;
  operatorName: string;
  /** The job's: a base of another is converted whole, so the canonical reader refuses it by name. */
  maxParallelism: number;
}

/**
 * The keyed snapshots a restore reads, each old subtask's chain (its full snapshot, then the changes
 * on it) as the canonical reader takes them: a chain whose full snapshot is a disk backend's base
 * (lmdb-base-format.ts) gets, in its place, a canonical full snapshot of the key groups of `range`
 * it holds, read from lmdb's file opened in a store of its own (a rescale, or a move to the heap
 * backend through a checkpoint). A base keeps the bytes of the whole file; the canonical snapshot
 * only `range`'s share.
 */
export async function canonicalChains(
  chains: readonly (readonly (Uint8Array | LmdbBase)[])[],
  range: KeyGroupRange,
  conversion: LmdbBaseConversion,
): Promise<Uint8Array[][]> {
  const out: Uint8Array[][] = [];
  for (const [first, ...rest] of chains) {
    if (first === undefined) continue;
    // Only a chain's full snapshot may be a base: the changes on it are canonical.
    const changes = rest as Uint8Array[];
    if (first instanceof Uint8Array && !isLmdbBase(first)) {
      out.push([first, ...changes]);
      continue;
    }
    const base = first instanceof Uint8Array ? readLmdbBase(first, `the disk state backend's base for operator "${conversion.operatorName}"`) : first;
    const shared = base.maxParallelism === conversion.maxParallelism ? keyGroupRangeIntersection(range, base.keyGroupRange) : base.keyGroupRange;
    if (keyGroupRangeSize(shared) === 0) continue;
    const backend = new LmdbKeyedStateBackend({
      maxParallelism: base.maxParallelism,
      keyGroupRange: base.keyGroupRange,
      operatorName: conversion.operatorName,
      dir: conversion.folder,
      base,
    });
    try {
      out.push([backend.snapshotKeyGroups(shared), ...changes]);
    } finally {
      await backend.dispose();
    }
  }
  return out;
}
