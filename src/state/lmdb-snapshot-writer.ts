import type { AsyncKeyedStateSnapshot } from '../core/state/keyed-state-backend.ts';
import type { StateTtl } from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { StateKind } from '../core/state/state-types.ts';
import { DataOutputSerializer } from './data-output-serializer.ts';
import type { ChangedKeys } from './dirty-keys.ts';
import type { DeltaKeys } from './incremental-tracker.ts';
import type { KeyGroupRange } from './key-group-range.ts';
import { EVENT_TIMERS_ID, KeyReader, KeyWriter, PROCESSING_TIMERS_ID, prefixEnd, readOrderedDouble } from './lmdb-key-codec.ts';
import type { LmdbBarrier, LmdbStore, LmdbTransaction } from './lmdb-store.ts';
import { readGroupTimer } from './lmdb-timer-service.ts';
import { SlicedSnapshot, sectionPieces, type TableSection } from './sliced-snapshot.ts';
import { KEYED_STATE_FORMAT_VERSION, KEYED_STATE_MAGIC, SNAPSHOT_FLAG_DELTA, serializeStateValue, stateKindCode, TTL_FLAG } from './state-snapshot-format.ts';
import { isExpired, liveValue, type TtlValue } from './state-table.ts';

/** Entries per v8 blob, as the heap's writer. */
const CHUNK_ENTRIES = 2048;
/** lmdb entries read per range call. */
const READ_BATCH = 512;
/**
 * Changed keys read between two looks at the clock: each is a point read that may fault a page in
 * from disk (a state larger than memory), so 512 of them took up to 100 ms at 50M keys, past the
 * slice's budget, the task standing still meanwhile.
 */
const DELTA_CLOCK_EVERY = 16;

/** A state as it was at the barrier. */
export interface SnapshotState {
  id: number;
  name: string;
  kind: StateKind;
  ttlWrapped: boolean;
  /** With fullSnapshot cleanup, what expired at the barrier is left out. */
  ttl: StateTtl | undefined;
}

/** A state of an incremental snapshot: its index in the header, and its keys changed since the base, per key group index. */
interface DeltaState {
  index: number;
  state: SnapshotState;
  changed: ChangedKeys;
}

/**
 * Writes the keyed state snapshot of a disk backend in the canonical format (the heap's, read by
 * keyed-state-snapshot.ts: a heap backend restores it, and the other way round), asynchronously:
 * the constructor is the synchronous part (the write buffer goes to the flush thread and a
 * barrier is set: LmdbStore.barrier), then, once the barrier's read transaction is taken (its
 * writes in lmdb; MVCC, so later writes do not show in it; {@link waiting} until then), each
 * {@link step} reads key groups from that transaction (each one contiguous range: its states, then
 * its timers) until its time budget is spent; the task processes records between steps.
 *
 * With `delta` (an incremental snapshot, the same layout as the heap's, flag 0x01) it reads only
 * the changed keys from that transaction, each key's value at the barrier (a point read; a map key's
 * entries and a key's timers a range of their own), a key with nothing left as its deletion.
 * `transaction`: read that one (a caller's, which the caller ends) instead of a barrier's.
 */
export class LmdbSnapshotWriter extends SlicedSnapshot {
  readonly #store: LmdbStore;
  readonly #range: KeyGroupRange;
  readonly #operatorName: string;
  readonly #states = new Map<number, { index: number; state: SnapshotState }>();
  readonly #now: number;
  readonly #onEnd: () => void;
  readonly #reader = new KeyReader();
  #transaction: LmdbTransaction | undefined;
  /** The barrier whose transaction this writer reads (its own); undefined when reading a caller's, which the caller ends. */
  readonly #barrier: LmdbBarrier | undefined;
  /** The options of a point read in the transaction (one object: no allocation per key). */
  #inTransaction: { transaction: LmdbTransaction } | undefined;
  #keyGroup: number;
  /** Where the current key group's range goes on (after this key), undefined at its start. */
  #after: Buffer | undefined;
  #groupSections: TableSection[] = [];
  #section: TableSection | undefined;
  #sectionId = -1;
  #flat: unknown[] = [];
  /** The map being gathered: its key's bytes (kg | id | key), key and entries. */
  #mapPrefix: Buffer | undefined;
  #mapKey: unknown;
  #map: Map<unknown, unknown> | undefined;
  #timers: [unknown[], unknown[]] = [[], []];
  /** An incremental snapshot: the keys it writes (values at the barrier, deletions as undefined); undefined for a full one. */
  readonly delta: DeltaKeys | undefined;
  /** The base taken at the same barrier, written beside the chain (asked for with `materialize`). */
  materialization: AsyncKeyedStateSnapshot | undefined;
  readonly #deltaStates: DeltaState[] = [];
  /** Within the current key group: the delta state being written, its changed keys and how far. */
  #deltaState = 0;
  #deltaKeys: StateKey[] | undefined;
  #deltaPosition = 0;
  readonly #writer = new KeyWriter();

  constructor(
    store: LmdbStore,
    states: readonly SnapshotState[],
    maxParallelism: number,
    range: KeyGroupRange,
    operatorName: string,
    now: number,
    onEnd: () => void,
    delta?: DeltaKeys,
    transaction?: LmdbTransaction,
  ) {
    super(operatorName);
    this.#store = store;
    this.#range = range;
    this.#operatorName = operatorName;
    this.#now = now;
    this.#onEnd = onEnd;
    this.#keyGroup = range.start;
    this.delta = delta;
    const header = new DataOutputSerializer(256);
    header.writeBytes(KEYED_STATE_MAGIC);
    header.writeUint16(KEYED_STATE_FORMAT_VERSION);
    header.writeUint32(maxParallelism);
    header.writeInt32(range.start);
    header.writeInt32(range.end);
    header.writeUint8(delta === undefined ? 0 : SNAPSHOT_FLAG_DELTA);
    header.writeUint32(states.length);
    states.forEach((state, index) => {
      header.writeUint8(stateKindCode(state.kind) | (state.ttlWrapped ? TTL_FLAG : 0));
      header.writeString(state.name);
      this.#states.set(state.id, { index, state });
      const changed = delta?.tables.get(state.name);
      if (changed !== undefined) this.#deltaStates.push({ index, state, changed });
    });
    this.begin(header);
    if (transaction !== undefined) this.#read(transaction);
    else this.#barrier = store.barrier();
  }

  /** Reads nothing until the barrier's transaction is taken ({@link waiting} until then). */
  override step(budgetMs: number): boolean {
    if (!this.done) {
      try {
        if (!this.#ready()) return false;
      } catch (error) {
        this.release();
        throw error;
      }
    }
    return super.step(budgetMs);
  }

  /** Writes what is left at once: the task first waits for the barrier's writes to be in lmdb. */
  override runToEnd(): void {
    if (!this.done && !this.#ready()) {
      this.#store.settle();
      this.#ready();
    }
    super.runToEnd();
  }

  /** While the barrier's writes are being written by the flush thread: its transaction, once taken. */
  waiting(): Promise<void> | undefined {
    return this.done || this.#transaction !== undefined ? undefined : this.#barrier?.taken;
  }

  /** Whether the transaction to read is there (the barrier's, once taken). */
  #ready(): boolean {
    if (this.#transaction !== undefined) return true;
    if (this.#barrier?.failure !== undefined) throw this.#barrier.failure;
    const transaction = this.#barrier?.transaction;
    if (transaction === undefined) return false;
    this.#read(transaction);
    return true;
  }

  #read(transaction: LmdbTransaction): void {
    this.#transaction = transaction;
    this.#inTransaction = { transaction };
  }

  protected advance(until: number): boolean {
    if (this.#keyGroup > this.#range.end) return true;
    if (this.delta === undefined) this.#readBatch();
    else this.#readChanges(until);
    return false;
  }

  /** The snapshot is written or given up: the read transaction ends, so lmdb may reuse its pages. */
  protected free(): void {
    this.#barrier?.release();
    this.#transaction = undefined;
    this.#inTransaction = undefined;
    this.#onEnd();
  }

  /** Reads up to {@link READ_BATCH} entries of the current key group; at its end, writes its section. */
  #readBatch(): void {
    const prefix = Buffer.allocUnsafe(2);
    prefix.writeUInt16BE(this.#keyGroup, 0);
    const after = this.#after;
    let read = 0;
    for (const { key, value } of this.#store.state.db.getRange({
      start: after ?? prefix,
      end: prefixEnd(prefix),
      exclusiveStart: after !== undefined,
      limit: READ_BATCH,
      transaction: this.#transaction as LmdbTransaction,
    })) {
      read++;
      this.#entry(key, value);
      if (read === READ_BATCH) this.#after = Buffer.from(key);
    }
    if (read === READ_BATCH) return;
    this.#endGroup();
  }

  /**
   * An incremental snapshot: reads up to {@link READ_BATCH} changed keys of the current delta state
   * in the current key group, fewer when the slice's time (`until`) is up; after the last state, the
   * changed keys' timers, and the group's section.
   */
  #readChanges(until: number): void {
    const index = this.#keyGroup - this.#range.start;
    const states = this.#deltaStates;
    while (this.#deltaState < states.length) {
      const { index: stateIndex, state, changed } = states[this.#deltaState] as DeltaState;
      if (this.#deltaKeys === undefined) {
        const keys = changed.group(index);
        if (keys === undefined || keys.size === 0) {
          this.#deltaState++;
          continue;
        }
        this.#deltaKeys = [...keys];
        this.#deltaPosition = 0;
        this.#sectionId = state.id;
        this.#section = { stateIndex, count: 0, blobs: [] };
      }
      const keys = this.#deltaKeys;
      const end = Math.min(keys.length, this.#deltaPosition + READ_BATCH);
      // A key with no value at the barrier is written as its deletion (undefined).
      let i = this.#deltaPosition;
      while (i < end) {
        this.#push(keys[i], this.#valueAtBarrier(state, keys[i] as StateKey));
        i++;
        if (i % DELTA_CLOCK_EVERY === 0 && performance.now() >= until) break;
      }
      this.#deltaPosition = i;
      if (i < keys.length) return;
      this.#endSection();
      this.#deltaKeys = undefined;
      this.#deltaState++;
      return;
    }
    const delta = this.delta as DeltaKeys;
    for (let d = 0; d < 2; d++) {
      const keys = delta.timers[d as 0 | 1].group(index);
      if (keys === undefined) continue;
      const flat = this.#timers[d] as unknown[];
      for (const key of keys) flat.push(key, this.#timersAtBarrier(d === 0 ? PROCESSING_TIMERS_ID : EVENT_TIMERS_ID, key));
    }
    this.#endGroup();
    this.#deltaState = 0;
  }

  /** The value of `key` in `state` in the read transaction (a map's entries as one Map); undefined when it has none, or only expired ones. */
  #valueAtBarrier(state: SnapshotState, key: StateKey): unknown {
    const what = () => `a key of ${state.kind} state "${state.name}" of operator "${this.#operatorName}"`;
    const entry = this.#writer.reset().uint16(this.#keyGroup).uint16(state.id).value(key, what);
    const db = this.#store.state.db;
    const transaction = this.#transaction as LmdbTransaction;
    const ttl = state.ttl;
    if (state.kind !== 'map') {
      const value = db.get(entry.view(), this.#inTransaction);
      return value === undefined || ttl === undefined ? value : liveValue(state.kind, value, ttl, this.#now);
    }
    const prefix = entry.copy();
    let map: Map<unknown, unknown> | undefined;
    for (const { key: entryKey, value } of db.getRange({ start: prefix, end: prefixEnd(prefix), transaction })) {
      if (ttl !== undefined && isExpired(value as TtlValue<unknown>, ttl, this.#now)) continue;
      map ??= new Map();
      map.set(this.#reader.value(entryKey, prefix.length), value);
    }
    return map;
  }

  /** The timers of `key` in the time domain of state id `id` in the read transaction, flat: timestamp, namespace, ... (empty: none). */
  #timersAtBarrier(id: number, key: StateKey): unknown[] {
    const prefix = this.#writer
      .reset()
      .uint16(this.#keyGroup)
      .uint16(id)
      .value(key, () => 'a timer key')
      .copy();
    const pairs: unknown[] = [];
    const transaction = this.#transaction as LmdbTransaction;
    for (const { key: entryKey } of this.#store.state.db.getRange({ start: prefix, end: prefixEnd(prefix), transaction })) {
      pairs.push(readOrderedDouble(entryKey, prefix.length), this.#reader.value(entryKey, prefix.length + 8));
    }
    return pairs;
  }

  #entry(key: Buffer, value: unknown): void {
    const id = key.readUInt16BE(2);
    if (id === PROCESSING_TIMERS_ID || id === EVENT_TIMERS_ID) {
      if (this.#section !== undefined) this.#endSection();
      readGroupTimer(key, this.#reader, this.#timers[id === PROCESSING_TIMERS_ID ? 0 : 1]);
      return;
    }
    const known = this.#states.get(id);
    if (known === undefined) return; // a state first used after the barrier
    if (id !== this.#sectionId) {
      if (this.#section !== undefined) this.#endSection();
      this.#sectionId = id;
      this.#section = { stateIndex: known.index, count: 0, blobs: [] };
    }
    const { state } = known;
    const stateKey = this.#reader.key(key, 4);
    if (state.kind !== 'map') {
      const live = state.ttl === undefined ? value : liveValue(state.kind, value, state.ttl, this.#now);
      if (live !== undefined) this.#push(stateKey, live);
      return;
    }
    const keyEnd = this.#reader.next;
    const userKey = this.#reader.value(key, keyEnd);
    const mapPrefix = this.#mapPrefix;
    if (mapPrefix === undefined || mapPrefix.length !== keyEnd || key.compare(mapPrefix, 0, keyEnd, 0, keyEnd) !== 0) {
      this.#endMap();
      this.#mapPrefix = Buffer.from(key.subarray(0, keyEnd));
      this.#mapKey = stateKey;
      this.#map = new Map();
    }
    if (state.ttl !== undefined && isExpired(value as TtlValue<unknown>, state.ttl, this.#now)) return;
    (this.#map as Map<unknown, unknown>).set(userKey, value);
  }

  #push(key: unknown, value: unknown): void {
    const flat = this.#flat;
    flat.push(key, value);
    if (flat.length >= CHUNK_ENTRIES * 2) this.#endChunk();
  }

  #endMap(): void {
    const map = this.#map;
    if (map !== undefined && map.size > 0) this.#push(this.#mapKey, map);
    this.#map = undefined;
    this.#mapPrefix = undefined;
  }

  #endChunk(): void {
    const flat = this.#flat;
    if (flat.length === 0) return;
    const section = this.#section as TableSection;
    section.count += flat.length / 2;
    const name = this.#states.get(this.#sectionId)?.state.name;
    section.blobs.push(serializeStateValue(flat, `state "${name}" of operator "${this.#operatorName}"`));
    this.#flat = [];
  }

  #endSection(): void {
    this.#endMap();
    this.#endChunk();
    const section = this.#section as TableSection;
    if (section.count > 0) this.#groupSections.push(section);
    this.#section = undefined;
    this.#sectionId = -1;
  }

  /** The key group is read: its section (same layout as the heap writer's) goes into the body. */
  #endGroup(): void {
    if (this.#section !== undefined) this.#endSection();
    const tableSections = this.#groupSections;
    const timers = this.#timers;
    if (tableSections.length > 0 || timers[0].length > 0 || timers[1].length > 0) {
      // A full snapshot's timers are (key, timestamp, namespace) triples; an incremental one's (key, [timestamp, namespace...]) pairs.
      const width = this.delta === undefined ? 3 : 2;
      const blobs = timers.map((flat): [number, Uint8Array | undefined] =>
        flat.length === 0 ? [0, undefined] : [flat.length / width, serializeStateValue(flat, `the timers of operator "${this.#operatorName}"`)],
      );
      this.writeSection(this.#keyGroup, sectionPieces(tableSections, blobs));
    }
    this.#groupSections = [];
    this.#timers = [[], []];
    this.#after = undefined;
    this.#keyGroup++;
  }
}
