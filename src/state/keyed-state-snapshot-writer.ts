import type { StateTtl } from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { TimeDomain } from '../core/time/time-domain.ts';
import { ABSENT, type CopyOnWriteGroups, UncloneableValue } from './copy-on-write-groups.ts';
import { DataOutputSerializer } from './data-output-serializer.ts';
import type { DeltaKeys } from './incremental-tracker.ts';
import type { InternalTimerService, TimerHeapInternalTimer } from './internal-timer-service.ts';
import type { KeyedStateContents } from './keyed-state-snapshot.ts';
import { SlicedSnapshot, sectionPieces, type TableSection } from './sliced-snapshot.ts';
import { KEYED_STATE_FORMAT_VERSION, KEYED_STATE_MAGIC, SNAPSHOT_FLAG_DELTA, serializeStateValue, stateKindCode, TTL_FLAG } from './state-snapshot-format.ts';
import { liveValue, type StateTable } from './state-table.ts';

const TIME_DOMAINS: readonly TimeDomain[] = ['processing', 'event'];
/** Entries per v8 blob (version 4): a slice of the writer serializes about this many at a time. */
const CHUNK_ENTRIES = 2048;

/** The state table of the snapshot, as it was at the barrier. */
interface SnapshotTable {
  table: StateTable;
  /** With fullSnapshot cleanup, what expired at the barrier is left out. */
  ttl: StateTtl | undefined;
}

/**
 * Writes the keyed state snapshot of one subtask (the format is in keyed-state-snapshot.ts) as it
 * was at the barrier, asynchronously and in slices (Flink's asynchronous heap snapshot strategy).
 *
 * The constructor is the synchronous part, O(states x key groups): it notes the states, marks
 * every key group of every state table and timer service as pending (copy-on-write, see
 * {@link CopyOnWriteGroups}) and takes the time fullSnapshot TTL cleanup filters with. Each
 * {@link step} then writes key groups, in chunks of {@link CHUNK_ENTRIES} entries, until its time
 * budget is spent, reading each key's value at the barrier (its preimage if it was changed since,
 * the live value if not) and releasing each group once written; the task processes records between
 * steps. {@link result} is the snapshot once {@link step} returned true.
 */
export class KeyedStateSnapshotWriter extends SlicedSnapshot {
  readonly #contents: KeyedStateContents;
  readonly #tables: SnapshotTable[];
  readonly #now: number;
  readonly #onEnd: () => void;
  /** The key group being written (index from the range start), the state within it, and where in its keys. */
  #group = 0;
  #table = 0;
  #keys: StateKey[] | undefined;
  #position = 0;
  /** Keys deleted after the barrier, before the writer reached their group: only their preimage holds them. */
  #deleted: [StateKey, unknown][] = [];
  #current: TableSection | undefined;
  #groupSections: TableSection[] = [];
  /** An incremental snapshot: the keys it writes (values at the barrier, deletions as undefined); undefined for a full one. */
  readonly delta: DeltaKeys | undefined;

  constructor(contents: KeyedStateContents, onEnd: () => void = () => {}, delta?: DeltaKeys) {
    super(contents.operatorName);
    this.#contents = contents;
    this.#onEnd = onEnd;
    this.delta = delta;
    this.#now = contents.clock();
    this.#tables = [...contents.tables.values()].map((table) => ({ table, ttl: table.ttl?.cleanupFullSnapshot === true ? table.ttl : undefined }));
    const header = new DataOutputSerializer(256);
    header.writeBytes(KEYED_STATE_MAGIC);
    header.writeUint16(KEYED_STATE_FORMAT_VERSION);
    header.writeUint32(contents.maxParallelism);
    header.writeInt32(contents.keyGroupRange.start);
    header.writeInt32(contents.keyGroupRange.end);
    header.writeUint8(delta === undefined ? 0 : SNAPSHOT_FLAG_DELTA);
    header.writeUint32(this.#tables.length);
    for (const { table } of this.#tables) {
      header.writeUint8(stateKindCode(table.kind) | (table.ttlWrapped ? TTL_FLAG : 0));
      header.writeString(table.name);
    }
    this.begin(header);
    for (const { table } of this.#tables) table.cow.begin(contents.keyGroupCount);
    for (const timers of contents.timers) timers.cow.begin(contents.keyGroupCount);
  }

  protected advance(): boolean {
    if (this.#group >= this.#contents.keyGroupCount) return true;
    if (this.#table < this.#tables.length) this.#writeChunk();
    else this.#writeTimersAndSection();
    return false;
  }

  /** The snapshot is written or given up: writes to the state are free again. */
  protected free(): void {
    for (const { table } of this.#tables) table.cow.end();
    for (const timers of this.#contents.timers) timers.cow.end();
    this.#onEnd();
  }

  /** Writes up to {@link CHUNK_ENTRIES} entries of the current state in the current key group. */
  #writeChunk(): void {
    const { table, ttl } = this.#tables[this.#table] as SnapshotTable;
    const index = this.#group;
    const live = table.groups[index];
    const delta = this.delta;
    if (this.#keys === undefined) {
      const preimages = table.cow.preimages[index];
      const changed = delta?.tables.get(table.name)?.group(index);
      if (delta === undefined ? (live === undefined || live.size === 0) && preimages === undefined : changed === undefined || changed.size === 0) {
        table.cow.finish(index);
        this.#table++;
        return;
      }
      this.#keys = changed !== undefined ? [...changed] : live === undefined ? [] : [...live.keys()];
      this.#position = 0;
      this.#deleted = [];
      if (preimages !== undefined && delta === undefined) {
        for (const entry of preimages) if (entry[1] !== ABSENT && live?.has(entry[0]) !== true) this.#deleted.push(entry);
      }
      this.#current = { stateIndex: this.#table, count: 0, blobs: [] };
    }
    const keys = this.#keys;
    const preimages = table.cow.preimages[index];
    const flat: unknown[] = [];
    const end = Math.min(keys.length, this.#position + CHUNK_ENTRIES);
    for (let i = this.#position; i < end; i++) {
      const key = keys[i] as StateKey;
      const preimage = preimages?.get(key);
      let value = preimage === undefined ? live?.get(key) : preimage;
      if (value === ABSENT) value = undefined;
      if (ttl !== undefined && value !== undefined) value = liveValue(table.kind, value, ttl, this.#now);
      // A delta writes a key without a value at the barrier as its deletion (undefined).
      if (value !== undefined || delta !== undefined) flat.push(key, value);
    }
    this.#position = end;
    if (end >= keys.length) {
      for (const [key, preimage] of this.#deleted) {
        const value = ttl === undefined ? preimage : liveValue(table.kind, preimage, ttl, this.#now);
        if (value !== undefined) flat.push(key, value);
      }
      this.#deleted = [];
    }
    const section = this.#current as TableSection;
    if (flat.length > 0) {
      section.count += flat.length / 2;
      section.blobs.push(this.#serialize(flat, `${table.description} of operator "${this.#contents.operatorName}"`));
    }
    if (end < keys.length) return;
    if (section.count > 0) this.#groupSections.push(section);
    table.cow.finish(index);
    this.#keys = undefined;
    this.#current = undefined;
    this.#table++;
  }

  /** Writes the current key group's timers and its section, then moves to the next key group. */
  #writeTimersAndSection(): void {
    const index = this.#group;
    const delta = this.delta;
    const timerFlats = this.#contents.timers.map((timers, d) =>
      delta === undefined ? barrierTimers(timers, index) : changedTimers(timers, index, delta.timers[d as 0 | 1].group(index)),
    );
    const tableSections = this.#groupSections;
    if (tableSections.length > 0 || timerFlats.some((flat) => flat.length > 0)) {
      const timers = timerFlats.map((flat, d): [number, Uint8Array | undefined] =>
        flat.length === 0
          ? [0, undefined]
          : [
              delta === undefined ? flat.length / 3 : flat.length / 2,
              this.#serialize(flat, `the ${TIME_DOMAINS[d]}-time timers of operator "${this.#contents.operatorName}"`),
            ],
      );
      this.writeSection(index + this.#contents.keyGroupRange.start, sectionPieces(tableSections, timers));
    }
    for (const timers of this.#contents.timers) timers.cow.finish(index);
    this.#groupSections = [];
    this.#table = 0;
    this.#group++;
  }

  #serialize(flat: unknown[], what: string): Uint8Array {
    for (let i = 1; i < flat.length; i += 2) if (flat[i] instanceof UncloneableValue) flat[i] = (flat[i] as UncloneableValue).original;
    return serializeStateValue(flat, what);
  }
}

/** The timers of key group `index` as they were at the barrier, flat: key, timestamp, namespace. */
function barrierTimers(timers: InternalTimerService, index: number): unknown[] {
  const flat: unknown[] = [];
  const live = timers.groups[index];
  const preimages = timers.cow.preimages[index];
  const add = (key: StateKey, keyTimers: Map<number | string, TimerHeapInternalTimer>) => {
    for (const timer of keyTimers.values()) flat.push(key, timer.timestamp, timer.namespace);
  };
  if (live !== undefined) {
    for (const [key, keyTimers] of live) {
      const preimage = preimages?.get(key);
      if (preimage === undefined) add(key, keyTimers);
      else if (preimage !== ABSENT) add(key, preimage as Map<number | string, TimerHeapInternalTimer>);
    }
  }
  if (preimages !== undefined) {
    for (const [key, preimage] of preimages) {
      if (preimage !== ABSENT && live?.has(key) !== true) add(key, preimage as Map<number | string, TimerHeapInternalTimer>);
    }
  }
  return flat;
}

/**
 * The timers of the changed keys of key group `index` as they were at the barrier (an incremental
 * snapshot), flat: key, then its [timestamp, namespace, ...] (empty: the key has none left).
 */
function changedTimers(timers: InternalTimerService, index: number, changed: Set<StateKey> | undefined): unknown[] {
  const flat: unknown[] = [];
  if (changed === undefined) return flat;
  const live = timers.groups[index];
  const preimages = timers.cow.preimages[index];
  for (const key of changed) {
    const preimage = preimages?.get(key);
    const keyTimers = (preimage === undefined ? live?.get(key) : preimage === ABSENT ? undefined : preimage) as
      | Map<number | string, TimerHeapInternalTimer>
      | undefined;
    const pairs: unknown[] = [];
    if (keyTimers !== undefined) for (const timer of keyTimers.values()) pairs.push(timer.timestamp, timer.namespace);
    flat.push(key, pairs);
  }
  return flat;
}
