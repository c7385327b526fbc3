import type { StateKind } from '../core/state/state-types.ts';
import { DataInputDeserializer } from './data-input-deserializer.ts';
import { DataOutputSerializer } from './data-output-serializer.ts';
import { formatKeyGroupRange, type KeyGroupRange, keyGroupRange } from './key-group-range.ts';
import { checksum, readSnapshotHeader, stateKindCode, stateKindOfCode, TTL_FLAG } from './state-snapshot-format.ts';
import { readZstdChunks } from './zstd-chunks.ts';

/*
 * The disk backend's own checkpoint of its whole state (an "lmdb base"): lmdb's file as lmdb's
 * compacting copy wrote it (LmdbStore.startCopy), so a restore at the same key-group range opens it
 * (lmdb-compacted-meta.ts makes it writable) instead of decoding and re-inserting every key. Only
 * incremental checkpoints of the disk backend write it, as the full snapshot their changes add to;
 * savepoints and the heap backend stay canonical (keyed-state-snapshot.ts), and a restore at
 * another range, or into the heap backend, converts a base into the canonical format first
 * (lmdb-base-restore.ts).
 *
 * Format (version 2, integers little-endian; version 1 held lmdb's file as it is, F bytes):
 * ```
 * "WKLB"                      magic, 4 bytes
 * uint16                      format version
 * uint32                      maxParallelism
 * int32 int32                 key-group range start, end (inclusive) of the backend that wrote it
 * uint32 S, S x {uint8 kind, uint32 length + UTF-8 name}
 *                             the states at the barrier, in state id order (the id of an lmdb key's
 *                             state is its index here); kind as the canonical format's, 0x80 TTL
 * uint32 length + UTF-8 JSON  the value codec's record structures (msgpackr's shared structures:
 *                             lists of field names), so the file's values decode
 * 2 x float64                 the timer services' next registration sequence (processing, event)
 * uint32                      crc32 of every byte above
 * float64                     F, the length of lmdb's file
 * chunks                      lmdb's file (data.mdb): the state as it was at some moment at or after
 *                             the barrier (the copy takes its own read transaction), in compressed
 *                             chunks (zstd-chunks.ts) of 4 MiB of it each, until their raw lengths
 *                             add up to F (lmdb's pages after random writes are about half empty:
 *                             a base of small values takes about an eighth of the file's bytes)
 * the rest                    a canonical incremental snapshot (keyed-state-snapshot.ts, flag 0x01):
 *                             the values at the barrier of every key written between the barrier
 *                             and the end of the copy, which puts the file back to the barrier
 * ```
 * States first used after the barrier (ids past S) may hold entries in the file: a restore deletes them.
 */
export const LMDB_BASE_FORMAT_VERSION = 2;
/** The version that held lmdb's file uncompressed (still read). */
export const LMDB_BASE_RAW_FORMAT_VERSION = 1;
/** "WKLB": Weir keyed lmdb base. */
export const LMDB_BASE_MAGIC = Uint8Array.of(0x57, 0x4b, 0x4c, 0x42);

/** A state of a base: its id in the file's keys is its index. */
export interface LmdbBaseState {
  name: string;
  kind: StateKind;
  ttlWrapped: boolean;
}

/** What a base's header says. */
export interface LmdbBaseHeader {
  maxParallelism: number;
  keyGroupRange: KeyGroupRange;
  states: LmdbBaseState[];
  structures: string[][];
  /** The next registration sequence of the processing-time, then the event-time timers. */
  timerSequences: [number, number];
}

/**
 * A base read: its header, lmdb's file (its bytes, or a local file a restore streamed them into)
 * and the correction to apply on it (a canonical incremental snapshot).
 */
export interface LmdbBase extends LmdbBaseHeader {
  file: Uint8Array | { path: string };
  correction: Uint8Array;
}

/** Where lmdb's file starts in a base, its length, and whether it is in compressed pieces (version 2). */
export interface LmdbBaseLayout {
  header: LmdbBaseHeader;
  fileStart: number;
  fileLength: number;
  compressed: boolean;
}

/** Whether `bytes` is an lmdb base (else a canonical keyed snapshot). */
export function isLmdbBase(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && LMDB_BASE_MAGIC.every((byte, i) => bytes[i] === byte);
}

/**
 * The header of a base, up to (and with) the length of lmdb's file: the snapshot's first piece.
 * `version`: what follows it (tests write version 1, lmdb's file as it is).
 */
export function writeLmdbBaseHeader(header: LmdbBaseHeader, fileLength: number, version = LMDB_BASE_FORMAT_VERSION): Uint8Array {
  const out = new DataOutputSerializer(256);
  out.writeBytes(LMDB_BASE_MAGIC);
  out.writeUint16(version);
  out.writeUint32(header.maxParallelism);
  out.writeInt32(header.keyGroupRange.start);
  out.writeInt32(header.keyGroupRange.end);
  out.writeUint32(header.states.length);
  for (const state of header.states) {
    out.writeUint8(stateKindCode(state.kind) | (state.ttlWrapped ? TTL_FLAG : 0));
    out.writeString(state.name);
  }
  out.writeString(JSON.stringify(header.structures));
  out.writeFloat64(header.timerSequences[0]);
  out.writeFloat64(header.timerSequences[1]);
  out.writeUint32(checksum(out.view()));
  out.writeFloat64(fileLength);
  return Uint8Array.prototype.slice.call(out.view());
}

/** Reads a base (`source` names it in errors): its header checked, its file (decompressed) and correction (a view of `bytes`). */
export function readLmdbBase(bytes: Uint8Array, source: string): LmdbBase & { file: Uint8Array } {
  const { header, fileStart, fileLength, compressed } = readLmdbBaseLayout(bytes, source);
  if (!compressed) {
    if (fileLength > bytes.length - fileStart) throw new DataInputDeserializer(bytes, source).corrupt(`its lmdb file (${fileLength} bytes) is not inside it`);
    return { ...header, file: bytes.subarray(fileStart, fileStart + fileLength), correction: bytes.subarray(fileStart + fileLength) };
  }
  const { raw: file, end } = readZstdChunks(bytes, fileStart, fileLength, source);
  return { ...header, file, correction: bytes.subarray(end) };
}

/**
 * Reads a base's header from its first bytes (`bytes` may end anywhere after the length of lmdb's
 * file: a restore streams the rest). Throws STATE_SNAPSHOT_CORRUPT for a damaged header, and for
 * one `bytes` ends inside.
 */
export function readLmdbBaseLayout(bytes: Uint8Array, source: string): LmdbBaseLayout {
  const input = new DataInputDeserializer(bytes, source);
  const version = readSnapshotHeader(input, LMDB_BASE_MAGIC, 'disk state backend', LMDB_BASE_FORMAT_VERSION);
  const maxParallelism = input.readUint32('maxParallelism');
  const start = input.readInt32('the key-group range');
  const end = input.readInt32('the key-group range');
  if (end < start || start < 0 || end >= maxParallelism)
    throw input.corrupt(`its key-group range ${formatKeyGroupRange(keyGroupRange(start, end))} is not inside [0, ${maxParallelism})`);
  const count = input.readUint32('the state count');
  if (count > input.remaining) throw input.corrupt(`it claims ${count} states`);
  const states: LmdbBaseState[] = [];
  for (let i = 0; i < count; i++) {
    const code = input.readUint8('a state kind');
    const ttlWrapped = (code & TTL_FLAG) !== 0;
    states.push({ kind: stateKindOfCode(ttlWrapped ? code & ~TTL_FLAG : code, input), ttlWrapped, name: input.readString('a state name') });
  }
  const json = input.readString('the value structures');
  const timerSequences: [number, number] = [input.readFloat64('a timer sequence'), input.readFloat64('a timer sequence')];
  const headerEnd = input.position;
  if (checksum(bytes.subarray(0, headerEnd)) !== input.readUint32('the header checksum')) throw input.corrupt('the checksum of its header does not match');
  let structures: unknown;
  try {
    structures = JSON.parse(json);
  } catch (error) {
    throw input.corrupt('its value structures are not JSON', error);
  }
  if (!Array.isArray(structures) || !structures.every((fields) => Array.isArray(fields) && fields.every((field) => typeof field === 'string'))) {
    throw input.corrupt('its value structures are not lists of field names');
  }
  const fileLength = input.readFloat64('the length of its lmdb file');
  if (!Number.isSafeInteger(fileLength) || fileLength < 0) throw input.corrupt(`its lmdb file claims ${fileLength} bytes`);
  return {
    header: { maxParallelism, keyGroupRange: keyGroupRange(start, end), states, structures: structures as string[][], timerSequences },
    fileStart: input.position,
    fileLength,
    compressed: version !== LMDB_BASE_RAW_FORMAT_VERSION,
  };
}
