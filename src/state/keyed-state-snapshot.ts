import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { StateKind } from '../core/state/state-types.ts';
import { inflateKeyedSnapshot } from './compressed-snapshot.ts';
import { DataInputDeserializer } from './data-input-deserializer.ts';
import { formatKey } from './format-key.ts';
import type { InternalKeyContext } from './internal-key-context.ts';
import { type InternalTimerService, VOID_NAMESPACE } from './internal-timer-service.ts';
import { formatKeyGroupRange, type KeyGroupRange, keyGroupRange, keyGroupRangeContains } from './key-group-range.ts';
import { assignToKeyGroup } from './key-group-range-assignment.ts';
import {
  checksum,
  deserializeStateValue,
  KEYED_STATE_FORMAT_VERSION,
  KEYED_STATE_MAGIC,
  type KeyedSectionEntry,
  readSnapshotHeader,
  SECTION_INDEX_ENTRY_BYTES,
  SNAPSHOT_FLAG_DELTA,
  stateKindOfCode,
  TTL_FLAG,
} from './state-snapshot-format.ts';
import { StateTable } from './state-table.ts';

/** What the snapshot format reads and writes of a heap keyed state backend. */
export interface KeyedStateContents {
  maxParallelism: number;
  keyGroupRange: KeyGroupRange;
  operatorName: string;
  keyGroupCount: number;
  tables: Map<string, StateTable>;
  /** Processing-time timers, then event-time timers. */
  timers: readonly [InternalTimerService, InternalTimerService];
  context: InternalKeyContext;
  clock: () => number;
  /** A state's key group map that incremental snapshots apply to, when it has none (default: an empty Map). */
  deltaGroup?: () => Map<StateKey, unknown>;
}

/*
 * The keyed state snapshot of one subtask: its state and timers, per key group. Written by
 * KeyedStateSnapshotWriter (keyed-state-snapshot-writer.ts), read here.
 *
 * Snapshot format (version 6, integers little-endian):
 * ```
 * "WKSB"                      magic, 4 bytes
 * uint16                      format version
 * uint32                      maxParallelism
 * int32 int32                 key-group range start, end (inclusive) of the backend that wrote it
 * uint8                       flags: 0x01 an incremental snapshot (below)
 * uint32 S, S x {uint8 kind, uint32 length + UTF-8 name}
 *                             the states; kind 1 value, 2 list, 3 map, 4 reducing, 5 aggregating,
                             plus 0x80 when its values carry a TTL timestamp: { v, t } (a list's
                             elements, a map's values)
 * uint32                      crc32 of every byte above (the header)
 * sections, each:
 *   uint32 M, M x {uint32 state index, uint32 entry count, uint32 C, C x (uint32 length + v8([k0, v0, k1, v1...]))}
 *                             a state's entries in C chunks (an asynchronous snapshot writes a chunk
 *                             at a time, KeyedStateSnapshotWriter)
 *   2 x {uint32 timer count, uint32 length + v8([k0, t0, n0, k1, t1, n1...]) (length 0 if no timers)}
 *                             processing-time timers, then event-time timers: key, timestamp and
 *                             namespace ('' for a process function's own timers, the window for a
 *                             window operator's)
 * uint32 N, N x {uint32 keyGroup, uint32 offset, uint32 length, uint32 crc32}
 *                             index of the key-group sections, ascending key group; offset from the
 *                             start of the snapshot; only key groups holding data have a section
 * uint32                      crc32 of the index
 * uint32                      the index's offset (a reader finds the index from the end)
 * ```
 * The index is at the end so that a snapshot is written as it is produced (the storage takes its
 * pieces as they come) and never held whole.
 * An incremental snapshot (flag 0x01) has the same layout and holds only the keys changed since
 * the checkpoint it adds to: a state entry whose value is undefined is a deletion, and each timer
 * list is `uint32 key count, uint32 length + v8([k0, [t, n, t, n...], k1, [...]...])`, a changed
 * key's timers at the barrier (an empty list: none left). A restore reads a chain: a full snapshot,
 * then the incremental ones taken on it, oldest first.
 * Version 5 (before the index moved to the end) has the index after the states and one checksum
 * over the header and the index; it is still read.
 * Version 4 (before incremental snapshots) has no flags byte; it is still read.
 * Version 3 (before asynchronous snapshots) wrote a state's entries in one blob, without C; it is
 * still read.
 * Version 2 (before state TTL) has no 0x80 flag; it is still read.
 * Version 1 (before timer namespaces) wrote timers as pairs `[k0, t0, ...]`; it is still read, its
 * timers restored into the void namespace.
 * Restore reads the header and index, then only the sections of key groups it owns.
 */
/**
 * Loads the key groups the backend owns from snapshots of any earlier parallelism: one full
 * snapshot per old subtask, in any order, each followed by the incremental snapshots taken on it,
 * oldest first (a checkpoint's chain). Incremental snapshots are read compressed too (as their
 * files hold them: compressed-snapshot.ts), as is {@link applyKeyedStateDeltas}.
 */
export function restoreKeyedStateSnapshots(contents: KeyedStateContents, snapshots: readonly Uint8Array[]): void {
  const restoredFrom = new Map<number, number>();
  let fulls = 0;
  for (let s = 0; s < snapshots.length; s++) {
    const source = `keyed state snapshot ${s + 1} of ${snapshots.length} for operator "${contents.operatorName}"`;
    const bytes = inflateKeyedSnapshot(snapshots[s] as Uint8Array, source);
    if (restoreOne(contents, new DataInputDeserializer(bytes, source), s, restoredFrom, fulls > 0)) fulls++;
  }
}

/**
 * Applies incremental snapshots, oldest first, to what `contents` holds (no full snapshot before
 * them: the disk backend's base is lmdb's file). A full snapshot among them is refused.
 */
export function applyKeyedStateDeltas(contents: KeyedStateContents, deltas: readonly Uint8Array[]): void {
  for (let s = 0; s < deltas.length; s++) {
    const source = `incremental keyed state snapshot ${s + 1} of ${deltas.length} for operator "${contents.operatorName}"`;
    const input = new DataInputDeserializer(inflateKeyedSnapshot(deltas[s] as Uint8Array, source), source);
    if (restoreOne(contents, input, s, new Map(), true)) throw input.corrupt('it is a full snapshot where the changes on a base belong');
  }
}

/** Returns whether the snapshot was a full one. */
function restoreOne(
  contents: KeyedStateContents,
  input: DataInputDeserializer,
  snapshotIndex: number,
  restoredFrom: Map<number, number>,
  afterFull: boolean,
): boolean {
  const version = readSnapshotHeader(input, KEYED_STATE_MAGIC, 'keyed state', KEYED_STATE_FORMAT_VERSION);
  const maxParallelism = input.readUint32('maxParallelism');
  const start = input.readInt32('the key-group range');
  const end = input.readInt32('the key-group range');
  const delta = version >= 5 && (input.readUint8('the flags') & SNAPSHOT_FLAG_DELTA) !== 0;
  if (delta && !afterFull) throw input.corrupt('it is an incremental snapshot with no full snapshot before it');
  const stateCount = input.readUint32('the state count');
  const states: { kind: StateKind; name: string; ttl: boolean }[] = [];
  for (let i = 0; i < stateCount; i++) {
    const code = input.readUint8('a state kind');
    const ttl = version >= 3 && (code & TTL_FLAG) !== 0;
    const kind = stateKindOfCode(ttl ? code & ~TTL_FLAG : code, input);
    states.push({ kind, name: input.readString('a state name'), ttl });
  }
  const { index, bodyStart, bodyEnd } = readIndex(input, version);

  if (maxParallelism !== contents.maxParallelism) {
    throw new WeirError(
      'MAX_PARALLELISM_CHANGED',
      `the checkpoint was taken with maxParallelism ${maxParallelism}, the job now has ${contents.maxParallelism}: maxParallelism is fixed for the life of a job`,
      { hint: `set maxParallelism back to ${maxParallelism} to restore this checkpoint (operator "${contents.operatorName}")` },
    );
  }
  const written = keyGroupRange(start, end);
  if (end >= start && (start < 0 || end >= maxParallelism)) throw input.corrupt(`its key-group range ${start}-${end} is not inside [0, ${maxParallelism})`);

  const tables = states.map(({ kind, name, ttl }) => restoredTable(contents, name, kind, ttl, input.source));
  for (const { keyGroup, offset, length, crc } of index) {
    if (!keyGroupRangeContains(written, keyGroup)) throw input.corrupt(`it has key group ${keyGroup}, outside its range ${formatKeyGroupRange(written)}`);
    if (!keyGroupRangeContains(contents.keyGroupRange, keyGroup)) continue;
    const earlier = delta ? undefined : restoredFrom.get(keyGroup);
    if (earlier !== undefined) {
      throw new WeirError(
        'DUPLICATE_KEY_GROUP',
        `key group ${keyGroup} is in keyed state snapshots ${earlier + 1} and ${snapshotIndex + 1} for operator "${contents.operatorName}"`,
        {
          fault: 'internal',
          hint: 'each key group must come from exactly one snapshot of the checkpoint',
        },
      );
    }
    if (!delta) restoredFrom.set(keyGroup, snapshotIndex);
    if (offset < bodyStart || offset + length > bodyEnd) throw input.corrupt(`key group ${keyGroup}'s section (${offset}+${length}) is outside the snapshot`);
    if (checksum(input.slice(offset, offset + length)) !== crc) throw input.corrupt(`the checksum of key group ${keyGroup} does not match`);
    const section = new DataInputDeserializer(input.slice(0, bodyEnd), input.source, offset, offset + length);
    if (delta) applyDeltaSection(contents, section, keyGroup, tables);
    else restoreSection(contents, section, keyGroup, tables, version);
    if (section.remaining !== 0) throw section.corrupt(`key group ${keyGroup} has ${section.remaining} bytes too many`);
  }
  return !delta;
}

/**
 * The index of a snapshot's key-group sections, and where its sections may lie. Up to version 5 the
 * index ends the header (one checksum over both); from version 6 the header has its own checksum and
 * the index is at the end: `uint32 N, N x {keyGroup, offset, length, crc32}, uint32 crc32 of the
 * index, uint32 the index's offset`, the last four bytes.
 */
function readIndex(input: DataInputDeserializer, version: number): { index: KeyedSectionEntry[]; bodyStart: number; bodyEnd: number } {
  if (version < 6) {
    const index = readEntries(input);
    const headerEnd = input.position;
    if (input.readUint32('the header checksum') !== checksum(input.slice(0, headerEnd))) throw input.corrupt('the header checksum does not match');
    return { index, bodyStart: input.position, bodyEnd: input.position + input.remaining };
  }
  const headerEnd = input.position;
  if (input.readUint32('the header checksum') !== checksum(input.slice(0, headerEnd))) throw input.corrupt('the header checksum does not match');
  const bodyStart = input.position;
  const end = input.position + input.remaining;
  if (end - bodyStart < 12) throw input.corrupt('it ends before its index');
  const indexOffset = input.slice(end - 4, end).readUInt32LE(0);
  if (indexOffset < bodyStart || indexOffset > end - 12)
    throw input.corrupt(`its index offset ${indexOffset} is outside the snapshot (${bodyStart}-${end - 12})`);
  const footer = new DataInputDeserializer(input.slice(0, end - 4), input.source, indexOffset);
  const index = readEntries(footer);
  const indexEnd = footer.position;
  if (footer.readUint32('the index checksum') !== checksum(input.slice(indexOffset, indexEnd))) throw input.corrupt('the index checksum does not match');
  if (footer.remaining !== 0) throw input.corrupt(`its index is followed by ${footer.remaining} bytes too many`);
  return { index, bodyStart, bodyEnd: indexOffset };
}

function readEntries(input: DataInputDeserializer): KeyedSectionEntry[] {
  const sectionCount = input.readUint32('the section count');
  if (sectionCount * SECTION_INDEX_ENTRY_BYTES > input.remaining) throw input.corrupt(`it ends inside the index of ${sectionCount} key groups`);
  const index: KeyedSectionEntry[] = [];
  for (let i = 0; i < sectionCount; i++) {
    index.push({
      keyGroup: input.readUint32('the index'),
      offset: input.readUint32('the index'),
      length: input.readUint32('the index'),
      crc: input.readUint32('the index'),
    });
  }
  return index;
}

function restoredTable(contents: KeyedStateContents, name: string, kind: StateKind, ttl: boolean, source: string): StateTable {
  const table = contents.tables.get(name);
  if (table === undefined) {
    const created = new StateTable(name, kind, contents.context, contents.keyGroupCount, contents.clock);
    created.ttlWrapped = ttl;
    contents.tables.set(name, created);
    return created;
  }
  if (table.ttlWrapped !== ttl) {
    throw new WeirError(
      'STATE_TTL_CHANGED',
      `${source} holds state "${name}" ${ttl ? 'with' : 'without'} a time to live, the operator ${table.ttlWrapped ? 'with' : 'without'} one`,
      {
        hint: 'turning TTL on or off changes how a state is stored: give the state a new name, or keep its TTL setting',
      },
    );
  }
  if (table.kind !== kind) {
    throw new WeirError('STATE_KIND_MISMATCH', `${source} holds state "${name}" as ${kind} state, but the operator uses it as ${table.kind} state`, {
      hint: 'a state keeps its kind for the life of a job; give the new state a new name',
    });
  }
  return table;
}

function restoreSection(contents: KeyedStateContents, input: DataInputDeserializer, keyGroup: number, tables: StateTable[], version: number): void {
  const index = keyGroup - contents.keyGroupRange.start;
  for (const [table, flat] of sectionStates(input, keyGroup, tables, version)) {
    const group = new Map<StateKey, unknown>();
    for (let e = 0; e < flat.length; e += 2) {
      const key = checkRestoredKey(contents, flat[e], keyGroup, input);
      const value = flat[e + 1];
      if ((table.kind === 'list' && !Array.isArray(value)) || (table.kind === 'map' && !(value instanceof Map)) || value === undefined) {
        throw input.corrupt(`${table.description} has a value of the wrong shape in key group ${keyGroup}`);
      }
      group.set(key, value);
    }
    table.groups[index] = group;
  }
  for (const timers of [contents.timers[0], contents.timers[1]]) {
    const count = input.readUint32('a section');
    const what = `the ${timers.domain}-time timers of key group ${keyGroup}`;
    if (count === 0) {
      if (input.readUint32(what) !== 0) throw input.corrupt(`${what} are not empty`);
      continue;
    }
    // Version 1 wrote [key, timestamp] pairs (no namespaces); version 2 writes [key, timestamp, namespace].
    const width = version === 1 ? 2 : 3;
    const flat = readFlat(input, count, what, width);
    for (let e = 0; e < flat.length; e += width) {
      const timestamp = flat[e + 1];
      if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw input.corrupt(`${what} hold a timestamp that is not a number`);
      const namespace = width === 2 ? VOID_NAMESPACE : flat[e + 2];
      if (typeof namespace !== 'string') throw input.corrupt(`${what} hold a namespace that is not a string`);
      timers.add(checkRestoredKey(contents, flat[e], keyGroup, input), timestamp, namespace, index);
    }
  }
}

/**
 * Applies one key group's section of an incremental snapshot: each state's changed keys get their
 * value (undefined: deleted), each changed key's timers are replaced by the ones listed.
 */
function applyDeltaSection(contents: KeyedStateContents, input: DataInputDeserializer, keyGroup: number, tables: StateTable[]): void {
  const index = keyGroup - contents.keyGroupRange.start;
  for (const [table, flat] of sectionStates(input, keyGroup, tables, KEYED_STATE_FORMAT_VERSION)) {
    let group = table.groups[index];
    if (group === undefined) {
      group = contents.deltaGroup?.() ?? new Map();
      table.groups[index] = group;
    }
    for (let e = 0; e < flat.length; e += 2) {
      const key = checkRestoredKey(contents, flat[e], keyGroup, input);
      const value = flat[e + 1];
      if (value === undefined) group.delete(key);
      else if ((table.kind === 'list' && !Array.isArray(value)) || (table.kind === 'map' && !(value instanceof Map))) {
        throw input.corrupt(`${table.description} has a value of the wrong shape in key group ${keyGroup}`);
      } else group.set(key, value);
    }
  }
  for (const timers of [contents.timers[0], contents.timers[1]]) {
    const count = input.readUint32('a section');
    const what = `the ${timers.domain}-time timers of key group ${keyGroup}`;
    if (count === 0) {
      if (input.readUint32(what) !== 0) throw input.corrupt(`${what} are not empty`);
      continue;
    }
    const flat = readFlat(input, count, what, 2);
    for (let e = 0; e < flat.length; e += 2) {
      const key = checkRestoredKey(contents, flat[e], keyGroup, input);
      const pairs = flat[e + 1];
      if (!Array.isArray(pairs) || pairs.length % 2 !== 0) throw input.corrupt(`${what} hold a key's timers that are not timestamp-namespace pairs`);
      timers.removeKey(key, index);
      for (let p = 0; p < pairs.length; p += 2) {
        const timestamp = pairs[p];
        const namespace = pairs[p + 1];
        if (typeof timestamp !== 'number' || !Number.isFinite(timestamp) || typeof namespace !== 'string')
          throw input.corrupt(`${what} hold a timer that is not a timestamp and a namespace`);
        timers.add(key, timestamp, namespace, index);
      }
    }
  }
}

/** The states of one key group's section, each with its entries flat ([k0, v0, k1, v1...]). */
function* sectionStates(input: DataInputDeserializer, keyGroup: number, tables: StateTable[], version: number): Generator<[StateTable, unknown[]]> {
  const tableCount = input.readUint32('a section');
  for (let i = 0; i < tableCount; i++) {
    const table = tables[input.readUint32('a section')];
    if (table === undefined) throw input.corrupt(`key group ${keyGroup} refers to a state that is not in its header`);
    const count = input.readUint32('a section');
    const what = `${table.description} in key group ${keyGroup}`;
    yield [table, version >= 4 ? readChunks(input, count, what) : readFlat(input, count, what)];
  }
}

/** A state's entries written in chunks (version 4): a chunk count, then one v8 array per chunk. */
function readChunks(input: DataInputDeserializer, count: number, what: string): unknown[] {
  const chunks = input.readUint32(what);
  if (chunks > input.remaining) throw input.corrupt(`${what} claim ${chunks} chunks`);
  const flat: unknown[] = [];
  for (let c = 0; c < chunks; c++) {
    const chunk = deserializeStateValue(input.readBlob(what), input, what);
    if (!Array.isArray(chunk) || chunk.length % 2 !== 0) throw input.corrupt(`${what} hold a chunk that is not key-value pairs`);
    for (const element of chunk) flat.push(element);
  }
  if (flat.length !== count * 2) throw input.corrupt(`${what} do not hold ${count} entries`);
  return flat;
}

function readFlat(input: DataInputDeserializer, count: number, what: string, width = 2): unknown[] {
  const flat = deserializeStateValue(input.readBlob(what), input, what);
  if (!Array.isArray(flat) || flat.length !== count * width) throw input.corrupt(`${what} do not hold ${count} entries`);
  return flat;
}

function checkRestoredKey(contents: KeyedStateContents, key: unknown, keyGroup: number, input: DataInputDeserializer): StateKey {
  const type = typeof key;
  if (type !== 'string' && type !== 'number' && type !== 'bigint' && type !== 'boolean')
    throw input.corrupt(`key group ${keyGroup} holds a key of type ${type}`);
  const actual = assignToKeyGroup(key as StateKey, contents.maxParallelism);
  if (actual !== keyGroup) {
    throw new WeirError(
      'KEY_GROUP_MISMATCH',
      `${input.source}: key ${formatKey(key as StateKey)} was stored in key group ${keyGroup} but hashes to key group ${actual}`,
      { fault: 'internal', hint: 'the key hash must never change between Weir versions; report this as a bug' },
    );
  }
  return key as StateKey;
}
