import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { StateKind } from '../core/state/state-types.ts';
import { inflateKeyedSnapshot } from './compressed-snapshot.ts';
import { InternalKeyContext } from './internal-key-context.ts';
import { InternalTimerService } from './internal-timer-service.ts';
import { type KeyGroupRange, keyGroupRange } from './key-group-range.ts';
import { restoreKeyedStateSnapshots } from './keyed-state-snapshot.ts';
import { KeyWriter } from './lmdb-key-codec.ts';
import type { LmdbStateTable } from './lmdb-state-table.ts';
import type { LmdbStore } from './lmdb-store.ts';
import type { LmdbTimerService } from './lmdb-timer-service.ts';
import { StateTable } from './state-table.ts';

/** What a restore writes into: the disk backend's store, its state tables and timers. */
export interface LmdbRestoreTarget {
  maxParallelism: number;
  keyGroupRange: KeyGroupRange;
  operatorName: string;
  keyGroupCount: number;
  clock: () => number;
  store: LmdbStore;
  /** The tables the operator registered already (their kind and TTL are checked against the snapshot's). */
  existing: ReadonlyMap<string, LmdbStateTable>;
  /** The table of a restored state (made when new). */
  table(name: string, kind: StateKind, ttl: boolean): LmdbStateTable;
  timers: readonly [LmdbTimerService, LmdbTimerService];
}

/**
 * Loads canonical keyed snapshots (of any parallelism, heap or disk backend) into lmdb a batch of
 * key groups at a time: for each old subtask's chain (its full snapshot and the incremental ones
 * taken on it) and each batch of this backend's key groups (a 64th of the range, at least one key
 * group), the canonical reader (keyed-state-snapshot.ts, its checks and its format versions) reads
 * those key groups' sections into heap tables, which are written into lmdb and dropped. So a
 * restore holds about a 64th of an old subtask's state in memory, never the state (the disk
 * backend's state need not fit in memory), and reads each snapshot's index at most 64 times.
 */
export function restoreIntoLmdb(target: LmdbRestoreTarget, snapshots: readonly Uint8Array[]): void {
  const { store, keyGroupRange: range } = target;
  const key = new KeyWriter();
  const restoredFrom = new Map<number, number>();
  // Incremental snapshots as their files hold them are compressed (compressed-snapshot.ts): their flags are read inflated.
  const chains = chainsOf(
    snapshots.map((snapshot, index) =>
      inflateKeyedSnapshot(snapshot, `keyed state snapshot ${index + 1} of ${snapshots.length} for operator "${target.operatorName}"`),
    ),
  );
  // Key groups a batch: each snapshot's header and index are read once per batch, so at most
  // RESTORE_BATCHES reads of them per chain, whatever maxParallelism is.
  const size = range.end - range.start + 1;
  const perBatch = Math.max(1, Math.ceil(size / RESTORE_BATCHES));
  for (let s = 0; s < chains.length; s++) {
    for (let start = range.start; start <= range.end; start += perBatch) {
      for (const keyGroup of restoreKeyGroups(target, chains[s] as Uint8Array[], start, Math.min(range.end, start + perBatch - 1), key)) {
        const earlier = restoredFrom.get(keyGroup);
        if (earlier !== undefined) {
          throw new WeirError(
            'DUPLICATE_KEY_GROUP',
            `key group ${keyGroup} is in keyed state snapshots ${earlier + 1} and ${s + 1} for operator "${target.operatorName}"`,
            { fault: 'internal', hint: 'each key group must come from exactly one snapshot of the checkpoint' },
          );
        }
        restoredFrom.set(keyGroup, s);
      }
    }
  }
  store.flush();
}

/** Restores key groups `start`-`end` of one chain into lmdb; returns those the chain held anything of. */
function restoreKeyGroups(target: LmdbRestoreTarget, chain: Uint8Array[], start: number, end: number, key: KeyWriter): Set<number> {
  const { store } = target;
  const count = end - start + 1;
  const context = new InternalKeyContext(target.operatorName, start);
  const tables = new Map<string, StateTable>();
  for (const [name, table] of target.existing) {
    const heap = new StateTable(name, table.kind, context, count, target.clock);
    heap.ttlWrapped = table.ttlWrapped;
    tables.set(name, heap);
  }
  const timers: [InternalTimerService, InternalTimerService] = [
    new InternalTimerService('processing', context, count),
    new InternalTimerService('event', context, count),
  ];
  restoreKeyedStateSnapshots(
    {
      maxParallelism: target.maxParallelism,
      keyGroupRange: keyGroupRange(start, end),
      operatorName: target.operatorName,
      keyGroupCount: count,
      tables,
      timers,
      context,
      clock: target.clock,
    },
    chain,
  );
  const held = new Set<number>();
  for (const heap of tables.values()) {
    // Every state the snapshots name is registered, also one with nothing in these key groups (its kind is then checked).
    const table = target.table(heap.name, heap.kind, heap.ttlWrapped);
    const what = () => `a key of ${table.description}`;
    const userWhat = () => `a user key of ${table.description} of operator "${target.operatorName}"`;
    // Straight into lmdb, one transaction for the batch's entries of this state (the store is new: nothing else writes them).
    store.writeThrough(() => {
      heap.groups.forEach((group, index) => {
        if (group === undefined || group.size === 0) return;
        const keyGroup = start + index;
        held.add(keyGroup);
        for (const [stateKey, value] of group) {
          if (heap.kind !== 'map') {
            store.state.putNow(key.reset().uint16(keyGroup).uint16(table.id).value(stateKey, what).view(), value);
            continue;
          }
          for (const [userKey, entry] of value as Map<unknown, unknown>)
            store.state.putNow(key.reset().uint16(keyGroup).uint16(table.id).value(stateKey, what).value(userKey, userWhat).view(), entry);
        }
      });
    });
  }
  timers.forEach((heapTimers, domain) => {
    const lmdbTimers = target.timers[domain] as LmdbTimerService;
    heapTimers.groups.forEach((group, index) => {
      if (group === undefined || group.size === 0) return;
      const keyGroup = start + index;
      held.add(keyGroup);
      for (const [stateKey, keyTimers] of group) {
        const keyBytes = key
          .reset()
          .value(stateKey as StateKey, () => 'a timer key')
          .copy();
        for (const timer of keyTimers.values()) lmdbTimers.add(keyBytes, keyGroup, timer.timestamp, timer.namespace);
      }
    });
  });
  return held;
}

/** Batches of key groups a restore reads a chain in: each batch holds about 1/RESTORE_BATCHES of an old subtask's state. */
const RESTORE_BATCHES = 64;

/** Flags byte of a version 5+ snapshot (after magic, version, maxParallelism and the range): 0x01 an incremental one. */
const FLAGS_OFFSET = 18;
const DELTA_FLAG = 0x01;

/**
 * The snapshots grouped as the canonical reader takes them: each full snapshot with the
 * incremental snapshots that follow it (an old subtask's chain), restored together.
 */
function chainsOf(snapshots: readonly Uint8Array[]): Uint8Array[][] {
  const chains: Uint8Array[][] = [];
  for (const snapshot of snapshots) {
    const version = snapshot.length >= 6 ? (snapshot[4] as number) | ((snapshot[5] as number) << 8) : 0;
    const delta = version >= 5 && snapshot.length > FLAGS_OFFSET && ((snapshot[FLAGS_OFFSET] as number) & DELTA_FLAG) !== 0;
    const last = chains[chains.length - 1];
    if (delta && last !== undefined) last.push(snapshot);
    else chains.push([snapshot]);
  }
  return chains;
}
