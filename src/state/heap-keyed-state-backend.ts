import { WeirError } from '../core/errors/weir-error.ts';
import type { KeyedStateBackend } from '../core/state/keyed-state-backend.ts';
import { type AnyStateDescriptor, checkFunction, type StateDescriptor } from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { AggregatingState, ListState, MapState, ReducingState, StateKind, ValueState } from '../core/state/state-types.ts';
import type { TimeDomain } from '../core/time/time-domain.ts';
import { DataInputDeserializer } from './data-input-deserializer.ts';
import { DataOutputSerializer } from './data-output-serializer.ts';
import { HeapAggregatingState } from './heap-aggregating-state.ts';
import { HeapListState } from './heap-list-state.ts';
import { HeapMapState } from './heap-map-state.ts';
import { HeapReducingState } from './heap-reducing-state.ts';
import { HeapValueState } from './heap-value-state.ts';
import { InternalKeyContext } from './internal-key-context.ts';
import { InternalTimerService, VOID_NAMESPACE } from './internal-timer-service.ts';
import { formatKeyGroupRange, type KeyGroupRange, keyGroupRange, keyGroupRangeContains, keyGroupRangeSize } from './key-group-range.ts';
import { assignToKeyGroup, UPPER_BOUND_MAX_PARALLELISM } from './key-group-range-assignment.ts';
import {
  checksum,
  deserializeStateValue,
  KEYED_STATE_FORMAT_VERSION,
  KEYED_STATE_MAGIC,
  readSnapshotHeader,
  serializeStateValue,
  stateKindCode,
  stateKindOfCode,
} from './state-snapshot-format.ts';
import { StateTable } from './state-table.ts';

export interface HeapKeyedStateBackendOptions {
  /** The job's maxParallelism: the number of key groups. */
  maxParallelism: number;
  /** The key groups this subtask owns. */
  keyGroupRange: KeyGroupRange;
  /** Names the operator in errors. */
  operatorName: string;
}

/** Any keyed state object (element types erased). */
export type KeyedState = ValueState<unknown> | ListState<unknown> | MapState<unknown, unknown> | ReducingState<unknown> | AggregatingState<unknown, unknown>;

const TIME_DOMAINS: readonly TimeDomain[] = ['processing', 'event'];
const SECTION_INDEX_ENTRY_BYTES = 16;

/**
 * Keyed state and timers of one subtask, held as JavaScript values in memory (Flink's
 * `HeapKeyedStateBackend` plus its `InternalTimerService`s).
 *
 * The runtime calls {@link setCurrentKey} before each record or timer; state objects from
 * {@link getState} then read and write that key's data. Data is kept per key group so that
 * {@link snapshot} writes it per key group and {@link restore} takes only the key groups this
 * subtask owns, from snapshots of any earlier parallelism (with the same maxParallelism).
 *
 * State values must be structured-cloneable: snapshots write them with `node:v8` serialize.
 *
 * Snapshot format (version 2, integers little-endian):
 * ```
 * "WKSB"                      magic, 4 bytes
 * uint16                      format version
 * uint32                      maxParallelism
 * int32 int32                 key-group range start, end (inclusive) of the backend that wrote it
 * uint32 S, S x {uint8 kind, uint32 length + UTF-8 name}
 *                             the states; kind 1 value, 2 list, 3 map, 4 reducing, 5 aggregating
 * uint32 N, N x {uint32 keyGroup, uint32 offset, uint32 length, uint32 crc32}
 *                             index of the key-group sections, ascending key group; offset from the
 *                             start of the snapshot; only key groups holding data have a section
 * uint32                      crc32 of every byte above
 * sections, each:
 *   uint32 M, M x {uint32 state index, uint32 entry count, uint32 length + v8([k0, v0, k1, v1...])}
 *   2 x {uint32 timer count, uint32 length + v8([k0, t0, n0, k1, t1, n1...]) (length 0 if no timers)}
 *                             processing-time timers, then event-time timers: key, timestamp and
 *                             namespace ('' for a process function's own timers, the window for a
 *                             window operator's)
 * ```
 * Version 1 (before timer namespaces) wrote timers as pairs `[k0, t0, ...]`; it is still read, its
 * timers restored into the void namespace.
 * Restore reads the header and index, then only the sections of key groups it owns.
 */
export class HeapKeyedStateBackend implements KeyedStateBackend {
  readonly maxParallelism: number;
  readonly keyGroupRange: KeyGroupRange;
  readonly operatorName: string;
  private readonly context: InternalKeyContext;
  private readonly keyGroupCount: number;
  private readonly tables = new Map<string, StateTable>();
  private readonly states = new Map<string, KeyedState>();
  private readonly processingTimers: InternalTimerService;
  private readonly eventTimers: InternalTimerService;

  constructor(options: HeapKeyedStateBackendOptions) {
    const { maxParallelism, keyGroupRange: range, operatorName } = options;
    if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > UPPER_BOUND_MAX_PARALLELISM) {
      throw new WeirError(
        'INVALID_MAX_PARALLELISM',
        `operator "${operatorName}": maxParallelism (${maxParallelism}) must be between 1 and ${UPPER_BOUND_MAX_PARALLELISM}`,
        {
          fault: 'internal',
          hint: 'check parallelism settings with checkParallelism before building backends',
        },
      );
    }
    const empty = range.end < range.start;
    if (!Number.isInteger(range.start) || !Number.isInteger(range.end) || (!empty && (range.start < 0 || range.end >= maxParallelism))) {
      throw new WeirError(
        'INVALID_KEY_GROUP_RANGE',
        `operator "${operatorName}": key-group range ${range.start}-${range.end} is not inside [0, ${maxParallelism})`,
        { fault: 'internal', hint: 'compute key-group ranges with computeKeyGroupRangeForOperatorIndex' },
      );
    }
    this.maxParallelism = maxParallelism;
    this.keyGroupRange = keyGroupRange(range.start, range.end);
    this.operatorName = operatorName;
    this.keyGroupCount = keyGroupRangeSize(range);
    this.context = new InternalKeyContext(operatorName, range.start);
    this.processingTimers = new InternalTimerService('processing', this.context, this.keyGroupCount);
    this.eventTimers = new InternalTimerService('event', this.context, this.keyGroupCount);
  }

  /**
   * Makes `key` the current key (hashing it once). The key must belong to this subtask's key
   * groups; a key outside them was routed to the wrong subtask, an internal error.
   */
  setCurrentKey(key: StateKey): void {
    const context = this.context;
    if (key === context.currentKey && context.keyGroupIndex >= 0) return;
    const keyGroup = assignToKeyGroup(key, this.maxParallelism);
    const range = this.keyGroupRange;
    if (keyGroup < range.start || keyGroup > range.end) {
      throw new WeirError(
        'KEY_GROUP_OUT_OF_RANGE',
        `operator "${this.operatorName}": key ${formatKey(key)} is in key group ${keyGroup}, outside this subtask's key groups ${formatKeyGroupRange(range)}`,
        { fault: 'internal', hint: 'records must be routed to subtasks by key group (computeOperatorIndexForKeyGroup)' },
      );
    }
    context.currentKey = key;
    context.keyGroupIndex = keyGroup - range.start;
  }

  /** The current key, or undefined before the first {@link setCurrentKey}. */
  getCurrentKey(): StateKey | undefined {
    return this.context.currentKey;
  }

  /** The current key's key group, or -1 when no key is set. */
  currentKeyGroup(): number {
    const index = this.context.keyGroupIndex;
    return index < 0 ? -1 : index + this.keyGroupRange.start;
  }

  /**
   * The state object for `descriptor`, created on first call and the same object afterwards (it
   * acts on whatever the current key is). A name used with two kinds is the user's error.
   */
  getState<S>(descriptor: StateDescriptor<S>): S {
    return this.getKeyedState(descriptor as AnyStateDescriptor) as S;
  }

  private getKeyedState(descriptor: AnyStateDescriptor): KeyedState {
    const existing = this.states.get(descriptor.name);
    if (existing !== undefined) {
      const table = this.tables.get(descriptor.name)!;
      if (table.kind !== descriptor.kind) {
        throw new WeirError(
          'STATE_KIND_MISMATCH',
          `operator "${this.operatorName}" uses state "${descriptor.name}" both as ${table.kind} state and as ${descriptor.kind} state`,
          { hint: 'give each state its own name' },
        );
      }
      return existing;
    }
    let table = this.tables.get(descriptor.name);
    if (table === undefined) {
      table = new StateTable(descriptor.name, descriptor.kind, this.context, this.keyGroupCount);
      this.tables.set(descriptor.name, table);
    } else if (table.kind !== descriptor.kind) {
      throw new WeirError(
        'STATE_KIND_MISMATCH',
        `operator "${this.operatorName}" asks for ${descriptor.kind} state "${descriptor.name}", but the restored checkpoint holds it as ${table.kind} state`,
        { hint: 'a state keeps its kind for the life of a job; give the new state a new name' },
      );
    }
    const state = createState(descriptor, table);
    this.states.set(descriptor.name, state);
    return state;
  }

  /** The names of all states: registered with getState or brought in by restore. */
  stateNames(): string[] {
    return [...this.tables.keys()];
  }

  /**
   * The keys that have a value in state `stateName`, key group by key group (empty for an unknown
   * name). A live view: collect the keys first to change state while iterating.
   */
  *keysOf(stateName: string): Iterable<StateKey> {
    const table = this.tables.get(stateName);
    if (table === undefined) return;
    for (const group of table.groups) if (group !== undefined) yield* group.keys();
  }

  private timers(domain: TimeDomain): InternalTimerService {
    if (domain === 'processing') return this.processingTimers;
    if (domain === 'event') return this.eventTimers;
    throw new WeirError('INVALID_TIME_DOMAIN', `operator "${this.operatorName}": unknown time domain ${JSON.stringify(domain)}`, {
      hint: "use 'processing' or 'event'",
    });
  }

  /**
   * Registers a timer for the current key at `timestamp` in `namespace` (default: the void
   * namespace of a process function's own timers); registering it again does nothing. Returns
   * whether it was new.
   */
  registerTimer(domain: TimeDomain, timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    return this.timers(domain).register(timestamp, namespace);
  }

  /** Deletes the current key's timer at `timestamp` in `namespace`, if any. Returns whether there was one. */
  deleteTimer(domain: TimeDomain, timestamp: number, namespace: string = VOID_NAMESPACE): boolean {
    return this.timers(domain).delete(timestamp, namespace);
  }

  /** The earliest timer's timestamp in `domain`, or undefined when there is none. */
  nextTimerTimestamp(domain: TimeDomain): number | undefined {
    return this.timers(domain).nextTimestamp();
  }

  /** How many timers `domain` holds. */
  numTimers(domain: TimeDomain): number {
    return this.timers(domain).size;
  }

  /**
   * Fires every timer of `domain` with a timestamp at most `time`, earliest first (one timestamp:
   * registration order), making its key the current key before calling `onTimer`. Timers that
   * `onTimer` registers at or before `time` fire in the same call. The current key is left at the
   * last timer's key. Returns how many fired.
   */
  pollTimersUpTo(domain: TimeDomain, time: number, onTimer: (key: StateKey, timestamp: number, namespace: string) => void): number {
    const timers = this.timers(domain);
    const context = this.context;
    let fired = 0;
    for (let timer = timers.pollUpTo(time); timer !== undefined; timer = timers.pollUpTo(time)) {
      context.currentKey = timer.key;
      context.keyGroupIndex = timer.keyGroupIndex;
      fired++;
      onTimer(timer.key, timer.timestamp, timer.namespace);
    }
    return fired;
  }

  /** Whether no state holds any key and there are no timers. */
  isEmpty(): boolean {
    for (const table of this.tables.values()) if (!table.isEmpty()) return false;
    return this.processingTimers.isEmpty() && this.eventTimers.isEmpty();
  }

  /** Writes all state and timers, per key group (format in the class documentation). */
  snapshot(): Uint8Array {
    const tables = [...this.tables.values()];
    const header = new DataOutputSerializer(256);
    header.writeBytes(KEYED_STATE_MAGIC);
    header.writeUint16(KEYED_STATE_FORMAT_VERSION);
    header.writeUint32(this.maxParallelism);
    header.writeInt32(this.keyGroupRange.start);
    header.writeInt32(this.keyGroupRange.end);
    header.writeUint32(tables.length);
    for (const table of tables) {
      header.writeUint8(stateKindCode(table.kind));
      header.writeString(table.name);
    }

    const body = new DataOutputSerializer(4096);
    const sections: { keyGroup: number; offset: number; length: number; crc: number }[] = [];
    const flat: unknown[] = [];
    for (let index = 0; index < this.keyGroupCount; index++) {
      const start = body.length;
      let tablesWithData = 0;
      for (const table of tables) if ((table.groups[index]?.size ?? 0) > 0) tablesWithData++;
      const timerGroups = [this.processingTimers.groups[index], this.eventTimers.groups[index]];
      if (tablesWithData === 0 && timerGroups.every((group) => group === undefined || group.size === 0)) continue;
      body.writeUint32(tablesWithData);
      for (let t = 0; t < tables.length; t++) {
        const table = tables[t]!;
        const group = table.groups[index];
        if (group === undefined || group.size === 0) continue;
        flat.length = 0;
        for (const [key, value] of group) flat.push(key, value);
        body.writeUint32(t);
        body.writeUint32(group.size);
        body.writeBlob(serializeStateValue(flat, `${table.description} of operator "${this.operatorName}"`));
      }
      for (let d = 0; d < TIME_DOMAINS.length; d++) {
        flat.length = 0;
        const group = timerGroups[d];
        if (group !== undefined) for (const [key, timers] of group) for (const timer of timers.values()) flat.push(key, timer.timestamp, timer.namespace);
        body.writeUint32(flat.length / 3);
        if (flat.length === 0) body.writeUint32(0);
        else body.writeBlob(serializeStateValue(flat, `the ${TIME_DOMAINS[d]}-time timers of operator "${this.operatorName}"`));
      }
      const length = body.length - start;
      sections.push({ keyGroup: index + this.keyGroupRange.start, offset: start, length, crc: checksum(body.view(start, start + length)) });
    }

    const headerLength = header.length + 4 + sections.length * SECTION_INDEX_ENTRY_BYTES + 4;
    if (headerLength + body.length > 0xffffffff) {
      throw new WeirError('STATE_TOO_LARGE', `operator "${this.operatorName}": the keyed state snapshot would exceed 4 GiB`, {
        hint: 'raise the parallelism of the operator so each subtask holds less state',
      });
    }
    header.writeUint32(sections.length);
    for (const section of sections) {
      header.writeUint32(section.keyGroup);
      header.writeUint32(headerLength + section.offset);
      header.writeUint32(section.length);
      header.writeUint32(section.crc);
    }
    header.writeUint32(checksum(header.view()));
    const out = new Uint8Array(header.length + body.length);
    out.set(header.view(), 0);
    out.set(body.view(), header.length);
    return out;
  }

  /**
   * Loads the key groups this backend owns from snapshots of any earlier parallelism (one per old
   * subtask, in any order) taken with the same maxParallelism. Must be called on an empty backend.
   */
  restore(snapshots: readonly Uint8Array[]): void {
    if (!this.isEmpty()) {
      throw new WeirError('RESTORE_INTO_USED_BACKEND', `operator "${this.operatorName}": state can only be restored into an empty backend`, {
        fault: 'internal',
        hint: 'restore state before processing any record',
      });
    }
    const restoredFrom = new Map<number, number>();
    for (let s = 0; s < snapshots.length; s++) {
      const source = `keyed state snapshot ${s + 1} of ${snapshots.length} for operator "${this.operatorName}"`;
      this.restoreOne(new DataInputDeserializer(snapshots[s]!, source), s, restoredFrom);
    }
  }

  private restoreOne(input: DataInputDeserializer, snapshotIndex: number, restoredFrom: Map<number, number>): void {
    const version = readSnapshotHeader(input, KEYED_STATE_MAGIC, 'keyed state', KEYED_STATE_FORMAT_VERSION);
    const maxParallelism = input.readUint32('maxParallelism');
    const start = input.readInt32('the key-group range');
    const end = input.readInt32('the key-group range');
    const stateCount = input.readUint32('the state count');
    const states: { kind: StateKind; name: string }[] = [];
    for (let i = 0; i < stateCount; i++) {
      const kind = stateKindOfCode(input.readUint8('a state kind'), input);
      states.push({ kind, name: input.readString('a state name') });
    }
    const sectionCount = input.readUint32('the section count');
    if (sectionCount * SECTION_INDEX_ENTRY_BYTES > input.remaining) throw input.corrupt(`it ends inside the index of ${sectionCount} key groups`);
    const index: { keyGroup: number; offset: number; length: number; crc: number }[] = [];
    for (let i = 0; i < sectionCount; i++) {
      index.push({
        keyGroup: input.readUint32('the index'),
        offset: input.readUint32('the index'),
        length: input.readUint32('the index'),
        crc: input.readUint32('the index'),
      });
    }
    const headerEnd = input.position;
    if (input.readUint32('the header checksum') !== checksum(input.slice(0, headerEnd))) throw input.corrupt('the header checksum does not match');

    if (maxParallelism !== this.maxParallelism) {
      throw new WeirError(
        'MAX_PARALLELISM_CHANGED',
        `the checkpoint was taken with maxParallelism ${maxParallelism}, the job now has ${this.maxParallelism}: maxParallelism is fixed for the life of a job`,
        { hint: `set maxParallelism back to ${maxParallelism} to restore this checkpoint (operator "${this.operatorName}")` },
      );
    }
    const written = keyGroupRange(start, end);
    if (end >= start && (start < 0 || end >= maxParallelism)) throw input.corrupt(`its key-group range ${start}-${end} is not inside [0, ${maxParallelism})`);

    const tables = states.map(({ kind, name }) => this.restoredTable(name, kind, input.source));
    const snapshotEnd = input.position + input.remaining;
    for (const { keyGroup, offset, length, crc } of index) {
      if (!keyGroupRangeContains(written, keyGroup)) throw input.corrupt(`it has key group ${keyGroup}, outside its range ${formatKeyGroupRange(written)}`);
      if (!keyGroupRangeContains(this.keyGroupRange, keyGroup)) continue;
      const earlier = restoredFrom.get(keyGroup);
      if (earlier !== undefined) {
        throw new WeirError(
          'DUPLICATE_KEY_GROUP',
          `key group ${keyGroup} is in keyed state snapshots ${earlier + 1} and ${snapshotIndex + 1} for operator "${this.operatorName}"`,
          {
            fault: 'internal',
            hint: 'each key group must come from exactly one snapshot of the checkpoint',
          },
        );
      }
      restoredFrom.set(keyGroup, snapshotIndex);
      if (offset < headerEnd + 4 || offset + length > snapshotEnd)
        throw input.corrupt(`key group ${keyGroup}'s section (${offset}+${length}) is outside the snapshot`);
      if (checksum(input.slice(offset, offset + length)) !== crc) throw input.corrupt(`the checksum of key group ${keyGroup} does not match`);
      const section = new DataInputDeserializer(input.slice(0, snapshotEnd), input.source, offset, offset + length);
      this.restoreSection(section, keyGroup, tables, version);
      if (section.remaining !== 0) throw section.corrupt(`key group ${keyGroup} has ${section.remaining} bytes too many`);
    }
  }

  private restoredTable(name: string, kind: StateKind, source: string): StateTable {
    const table = this.tables.get(name);
    if (table === undefined) {
      const created = new StateTable(name, kind, this.context, this.keyGroupCount);
      this.tables.set(name, created);
      return created;
    }
    if (table.kind !== kind) {
      throw new WeirError('STATE_KIND_MISMATCH', `${source} holds state "${name}" as ${kind} state, but the operator uses it as ${table.kind} state`, {
        hint: 'a state keeps its kind for the life of a job; give the new state a new name',
      });
    }
    return table;
  }

  private restoreSection(input: DataInputDeserializer, keyGroup: number, tables: StateTable[], version: number): void {
    const index = keyGroup - this.keyGroupRange.start;
    const tableCount = input.readUint32('a section');
    for (let i = 0; i < tableCount; i++) {
      const table = tables[input.readUint32('a section')];
      if (table === undefined) throw input.corrupt(`key group ${keyGroup} refers to a state that is not in its header`);
      const count = input.readUint32('a section');
      const flat = this.readFlat(input, count, `${table.description} in key group ${keyGroup}`);
      const group = new Map<StateKey, unknown>();
      for (let e = 0; e < flat.length; e += 2) {
        const key = this.checkRestoredKey(flat[e], keyGroup, input);
        const value = flat[e + 1];
        if ((table.kind === 'list' && !Array.isArray(value)) || (table.kind === 'map' && !(value instanceof Map)) || value === undefined) {
          throw input.corrupt(`${table.description} has a value of the wrong shape in key group ${keyGroup}`);
        }
        group.set(key, value);
      }
      table.groups[index] = group;
    }
    for (const timers of [this.processingTimers, this.eventTimers]) {
      const count = input.readUint32('a section');
      const what = `the ${timers.domain}-time timers of key group ${keyGroup}`;
      if (count === 0) {
        if (input.readUint32(what) !== 0) throw input.corrupt(`${what} are not empty`);
        continue;
      }
      // Version 1 wrote [key, timestamp] pairs (no namespaces); version 2 writes [key, timestamp, namespace].
      const width = version === 1 ? 2 : 3;
      const flat = this.readFlat(input, count, what, width);
      for (let e = 0; e < flat.length; e += width) {
        const timestamp = flat[e + 1];
        if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw input.corrupt(`${what} hold a timestamp that is not a number`);
        const namespace = width === 2 ? VOID_NAMESPACE : flat[e + 2];
        if (typeof namespace !== 'string') throw input.corrupt(`${what} hold a namespace that is not a string`);
        timers.add(this.checkRestoredKey(flat[e], keyGroup, input), timestamp, namespace, index);
      }
    }
  }

  private readFlat(input: DataInputDeserializer, count: number, what: string, width = 2): unknown[] {
    const flat = deserializeStateValue(input.readBlob(what), input, what);
    if (!Array.isArray(flat) || flat.length !== count * width) throw input.corrupt(`${what} do not hold ${count} entries`);
    return flat;
  }

  private checkRestoredKey(key: unknown, keyGroup: number, input: DataInputDeserializer): StateKey {
    const type = typeof key;
    if (type !== 'string' && type !== 'number' && type !== 'bigint' && type !== 'boolean')
      throw input.corrupt(`key group ${keyGroup} holds a key of type ${type}`);
    const actual = assignToKeyGroup(key as StateKey, this.maxParallelism);
    if (actual !== keyGroup) {
      throw new WeirError(
        'KEY_GROUP_MISMATCH',
        `${input.source}: key ${formatKey(key as StateKey)} was stored in key group ${keyGroup} but hashes to key group ${actual}`,
        { fault: 'internal', hint: 'the key hash must never change between Weir versions; report this as a bug' },
      );
    }
    return key as StateKey;
  }
}

function createState(descriptor: AnyStateDescriptor, table: StateTable): KeyedState {
  switch (descriptor.kind) {
    case 'value':
      return new HeapValueState(table, descriptor.defaultValue);
    case 'list':
      return new HeapListState(table);
    case 'map':
      return new HeapMapState(table);
    case 'reducing':
      checkFunction(descriptor.reduce, 'reduce', descriptor.name, descriptor.kind);
      return new HeapReducingState(table, descriptor.reduce);
    case 'aggregating':
      checkFunction(descriptor.createAccumulator, 'createAccumulator', descriptor.name, descriptor.kind);
      checkFunction(descriptor.add, 'add', descriptor.name, descriptor.kind);
      checkFunction(descriptor.getResult, 'getResult', descriptor.name, descriptor.kind);
      return new HeapAggregatingState(table, descriptor);
    default:
      throw new WeirError(
        'INVALID_STATE_DESCRIPTOR',
        `state "${(descriptor as AnyStateDescriptor).name}" has unknown kind ${JSON.stringify((descriptor as AnyStateDescriptor).kind)}`,
        {
          hint: 'build descriptors with valueState, listState, mapState, reducingState or aggregatingState',
        },
      );
  }
}

function formatKey(key: StateKey): string {
  if (typeof key === 'string') return JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}...` : key);
  if (typeof key === 'bigint') return `${key}n`;
  return String(key);
}
