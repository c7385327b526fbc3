import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';
import { inflateKeyedSnapshot } from './compressed-snapshot.ts';
import { InternalKeyContext } from './internal-key-context.ts';
import type { InternalTimerService } from './internal-timer-service.ts';
import { formatKeyGroupRange, keyGroupRange } from './key-group-range.ts';
import { applyKeyedStateDeltas } from './keyed-state-snapshot.ts';
import type { LmdbBase } from './lmdb-base-format.ts';
import { KeyWriter, PROCESSING_TIMERS_ID, prefixEnd } from './lmdb-key-codec.ts';
import type { LmdbRestoreTarget } from './lmdb-restore.ts';
import type { LmdbTimerService } from './lmdb-timer-service.ts';
import type { StateTable } from './state-table.ts';

/** A key an incremental snapshot deleted. */
const DELETED: unique symbol = Symbol('deleted');

/** A key group's changes as the canonical reader applies them: a deletion is kept as {@link DELETED}, not dropped. */
class GroupChanges extends Map<StateKey, unknown> {
  override delete(key: StateKey): boolean {
    this.set(key, DELETED);
    return true;
  }
}

/** A time domain's changed keys as the canonical reader applies them: each such key's timers at the barrier, per key group index. */
class TimerChanges {
  readonly domain: string;
  readonly groups = new Map<number, Map<StateKey, [number, string][]>>();

  constructor(domain: string) {
    this.domain = domain;
  }

  removeKey(key: StateKey, index: number): void {
    let group = this.groups.get(index);
    if (group === undefined) {
      group = new Map();
      this.groups.set(index, group);
    }
    group.set(key, []);
  }

  add(key: StateKey, timestamp: number, namespace: string, index: number): void {
    const group = this.groups.get(index);
    const timers = group?.get(key);
    if (timers === undefined) {
      this.removeKey(key, index);
      this.add(key, timestamp, namespace, index);
      return;
    }
    timers.push([timestamp, namespace]);
  }
}

/** Key groups a batch, as restoreIntoLmdb's: a batch holds about this fraction of a change's values. */
const DELTA_BATCHES = 64;

/**
 * Applies canonical incremental snapshots, oldest first, to the state lmdb holds (the disk
 * backend's base and the changes a checkpoint added to it): a changed key's value replaces the
 * stored one, a deleted key goes (a map key with all its entries), a changed key's timers replace
 * its timers. One change at a time, inflated (compressed-snapshot.ts) once and dropped before the
 * next, and a batch of its key groups at a time through the canonical reader (its checks and
 * versions): memory holds one change inflated and a batch of its values, not the chain inflated
 * (the changes after a base grow with how long the next base takes: 27-34 at 50M keys). A key
 * changed by several changes is written once per change, each newer one over the last. The writes
 * go through the write buffer, so the flush thread writes one layer into lmdb while the task reads
 * the next.
 */
export function applyDeltasToLmdb(target: LmdbRestoreTarget, compressed: readonly Uint8Array[]): void {
  const range = target.keyGroupRange;
  const size = range.end - range.start + 1;
  const perBatch = Math.max(1, Math.ceil(size / DELTA_BATCHES));
  const key = new KeyWriter();
  compressed.forEach((bytes, index) => {
    const delta = inflateKeyedSnapshot(bytes, `incremental keyed state snapshot ${index + 1} of ${compressed.length} for operator "${target.operatorName}"`);
    for (let start = range.start; start <= range.end; start += perBatch) applyBatch(target, [delta], start, Math.min(range.end, start + perBatch - 1), key);
  });
  target.store.flush();
}

function applyBatch(target: LmdbRestoreTarget, deltas: readonly Uint8Array[], start: number, end: number, key: KeyWriter): void {
  const { store } = target;
  const count = end - start + 1;
  const context = new InternalKeyContext(target.operatorName, start);
  const tables = new Map<string, StateTable>();
  const timers = [new TimerChanges('processing'), new TimerChanges('event')] as const;
  applyKeyedStateDeltas(
    {
      maxParallelism: target.maxParallelism,
      keyGroupRange: keyGroupRange(start, end),
      operatorName: target.operatorName,
      keyGroupCount: count,
      tables,
      timers: timers as unknown as readonly [InternalTimerService, InternalTimerService],
      context,
      clock: target.clock,
      deltaGroup: () => new GroupChanges(),
    },
    deltas,
  );
  for (const changes of tables.values()) {
    const table = target.table(changes.name, changes.kind, changes.ttlWrapped);
    const what = () => `a key of ${table.description}`;
    if (table.kind !== 'map') {
      // A key's value at the barrier replaces the stored one (through the write buffer: lmdb-write-behind.ts).
      changes.groups.forEach((group, index) => {
        if (group === undefined) return;
        const keyGroup = start + index;
        for (const [stateKey, value] of group) {
          key.reset().uint16(keyGroup).uint16(table.id).value(stateKey, what);
          if (value === DELETED) store.state.remove(key);
          else store.state.put(key, value);
        }
      });
      continue;
    }
    changes.groups.forEach((group, index) => {
      if (group === undefined) return;
      const keyGroup = start + index;
      for (const [stateKey, value] of group) {
        const entry = key.reset().uint16(keyGroup).uint16(table.id).value(stateKey, what);
        // A map key's entries at the barrier replace all of its entries.
        const prefix = entry.copy();
        store.removeRange(store.state, prefix, prefixEnd(prefix));
        if (value === DELETED) continue;
        for (const [userKey, userValue] of value as Map<unknown, unknown>) {
          const userWhat = () => `a user key of ${table.description} of operator "${target.operatorName}"`;
          store.state.put(key.reset().bytes(prefix).value(userKey, userWhat), userValue);
        }
      }
    });
  }
  timers.forEach((changes, domain) => {
    const lmdbTimers = target.timers[domain] as LmdbTimerService;
    for (const [index, group] of changes.groups) {
      const keyGroup = start + index;
      for (const [stateKey, keyTimers] of group) {
        const keyBytes = key
          .reset()
          .value(stateKey, () => 'a timer key')
          .copy();
        lmdbTimers.removeKey(keyBytes, keyGroup);
        for (const [timestamp, namespace] of keyTimers) lmdbTimers.add(keyBytes, keyGroup, timestamp, namespace);
      }
    }
  });
}

/**
 * The store of `target` was opened on lmdb's file of `base`: its states get their ids back (the
 * file's keys name them, in the order of the base's header), entries of states first used after the
 * base's barrier go, the timers count again, and the correction puts back the keys written between
 * the barrier and the copy.
 */
export function openLmdbBase(target: LmdbRestoreTarget, base: LmdbBase): void {
  const { keyGroupRange: range, store } = target;
  if (base.maxParallelism !== target.maxParallelism || base.keyGroupRange.start !== range.start || base.keyGroupRange.end !== range.end) {
    throw new WeirError(
      'INVALID_KEY_GROUP_RANGE',
      `operator "${target.operatorName}": a base of key groups ${formatKeyGroupRange(base.keyGroupRange)} opened for ${formatKeyGroupRange(range)}`,
      { fault: 'internal', hint: 'convert a base of another range or maxParallelism to the canonical format (canonicalChains)' },
    );
  }
  base.states.forEach((state, id) => {
    const table = target.table(state.name, state.kind, state.ttlWrapped);
    if (table.id !== id) {
      throw new WeirError(
        'STATE_SNAPSHOT_CORRUPT',
        `operator "${target.operatorName}": state "${state.name}" is state ${id} of the base but ${table.id} of the store`,
        {
          fault: 'internal',
        },
      );
    }
  });
  const after = Buffer.alloc(4);
  const end = Buffer.alloc(4);
  for (let keyGroup = range.start; keyGroup <= range.end; keyGroup++) {
    after.writeUInt16BE(keyGroup, 0);
    after.writeUInt16BE(base.states.length, 2);
    end.writeUInt16BE(keyGroup, 0);
    end.writeUInt16BE(PROCESSING_TIMERS_ID, 2);
    store.removeRange(store.state, after, end);
  }
  const [processing, event] = target.timers;
  processing.reopened(base.timerSequences[0]);
  event.reopened(base.timerSequences[1]);
  if (base.correction.length > 0) applyDeltasToLmdb(target, [base.correction]);
  processing.reopened(0);
  event.reopened(0);
}
