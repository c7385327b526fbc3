import { deserialize, serialize } from 'node:v8';
import { crc32 } from 'node:zlib';
import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKind } from '../core/state/state-types.ts';
import type { DataInputDeserializer } from './data-input-deserializer.ts';
import type { DataOutputSerializer } from './data-output-serializer.ts';

/**
 * What the keyed and the operator state snapshots share: magic bytes, the format version, CRC-32
 * checks and how values are written. Integers are little-endian. Values (and keys) are written with
 * `node:v8` serialize, so state values must be structured-cloneable: primitives, plain objects,
 * arrays, Map, Set, Date, RegExp, typed arrays, Error; no functions or symbols, and class instances
 * come back as plain objects.
 */

/**
 * The keyed state snapshot format this Weir writes and the newest it reads. 2: timers carry a
 * namespace (windows, join buffers); 3: TTL-stamped states; 4: a state's entries in chunks
 * (asynchronous snapshots); 5: a flags byte (incremental snapshots); 6: the key-group index at the
 * end (a snapshot is written as it is produced, never held whole). Versions 1 to 5 are still read.
 */
export const KEYED_STATE_FORMAT_VERSION = 6;
/** Set in a keyed state snapshot's flags byte (version 5 on): an incremental snapshot (the changes since another checkpoint's). */
export const SNAPSHOT_FLAG_DELTA = 0x01;
/** The operator state snapshot format this Weir writes and the newest it reads. */
export const OPERATOR_STATE_FORMAT_VERSION = 1;
/** Set in a keyed state's kind byte (version 3 on): its values carry a TTL timestamp ({ v, t }). */
export const TTL_FLAG = 0x80;
/** Bytes of one entry of a keyed state snapshot's key-group index. */
export const SECTION_INDEX_ENTRY_BYTES = 16;
/** "WKSB": Weir keyed state backend. */
export const KEYED_STATE_MAGIC = Uint8Array.of(0x57, 0x4b, 0x53, 0x42);
/** "WOSB": Weir operator state backend. */
export const OPERATOR_STATE_MAGIC = Uint8Array.of(0x57, 0x4f, 0x53, 0x42);

const KIND_CODES: Record<StateKind, number> = { value: 1, list: 2, map: 3, reducing: 4, aggregating: 5 };
const KINDS: readonly (StateKind | undefined)[] = [undefined, 'value', 'list', 'map', 'reducing', 'aggregating'];

export function stateKindCode(kind: StateKind): number {
  return KIND_CODES[kind];
}

export function stateKindOfCode(code: number, input: DataInputDeserializer): StateKind {
  const kind = KINDS[code];
  if (kind === undefined) throw input.corrupt(`unknown state kind code ${code}`);
  return kind;
}

export function checksum(bytes: Uint8Array): number {
  return crc32(bytes) >>> 0;
}

/**
 * Reads and checks the magic bytes and the format version; returns the version. An unknown magic is
 * a corrupt (or foreign) file; a newer version is a Weir too old to read it.
 */
export function readSnapshotHeader(input: DataInputDeserializer, magic: Uint8Array, kind: string, newest: number): number {
  const actual = input.readBytes(magic.length, 'the magic bytes');
  if (!actual.equals(magic)) {
    throw input.corrupt(`it does not start with the magic bytes of a ${kind} snapshot (${Buffer.from(magic).toString('latin1')})`);
  }
  const version = input.readUint16('the format version');
  if (version === 0) throw input.corrupt('its format version is 0');
  if (version > newest) {
    throw new WeirError('STATE_SNAPSHOT_VERSION', `${input.source}: state snapshot format version ${version} is newer than this Weir supports (${newest})`, {
      hint: 'restore with the Weir version that took the checkpoint, or a newer one',
    });
  }
  return version;
}

/** v8-serializes `value`; a value that cannot be cloned is the user's error naming `what`. */
export function serializeStateValue(value: unknown, what: string): Buffer {
  try {
    return serialize(value);
  } catch (error) {
    throw new WeirError('STATE_NOT_SERIALIZABLE', `${what} holds a value that cannot be written to a snapshot: ${(error as Error).message}`, {
      hint: 'state values must be structured-cloneable: primitives, plain objects, arrays, Map, Set, Date, typed arrays; no functions, symbols or class instances with behaviour',
      cause: error,
    });
  }
}

/** v8-deserializes a blob written by {@link serializeStateValue}. */
export function deserializeStateValue(bytes: Uint8Array, input: DataInputDeserializer, what: string): unknown {
  try {
    return deserialize(bytes);
  } catch (error) {
    throw input.corrupt(`${what} cannot be read (${(error as Error).message})`, error);
  }
}

/** One key group's section in a keyed snapshot's index: where its bytes are in the body, and their CRC-32. */
export interface KeyedSectionEntry {
  keyGroup: number;
  offset: number;
  length: number;
  crc: number;
}

/** Offsets in a keyed snapshot are uint32: one of 4 GiB or more is refused (as soon as it gets there: it is written as it is produced). */
export function checkKeyedSnapshotLength(length: number, operatorName: string): void {
  if (length > 0xffffffff) {
    throw new WeirError('STATE_TOO_LARGE', `operator "${operatorName}": the keyed state snapshot would exceed 4 GiB`, {
      hint: 'raise the parallelism of the operator so each subtask holds less state',
    });
  }
}

/** The header (everything up to the states) with its checksum after it: a version 6 snapshot's first bytes. */
export function keyedSnapshotPrefix(header: DataOutputSerializer): Uint8Array {
  header.writeUint32(checksum(header.view()));
  return Uint8Array.prototype.slice.call(header.view()); // a copy of its own (a Buffer's slice would share the serializer's memory)
}

/**
 * A version 6 snapshot's last bytes: the index of its sections (`indexOffset`: where it starts,
 * the snapshot's length so far), the index's checksum, then `indexOffset` itself, so a reader finds
 * the index from the end. Each section's offset is from the snapshot's start, as the index says.
 */
export function keyedSnapshotIndex(sections: readonly KeyedSectionEntry[], indexOffset: number, operatorName: string): Uint8Array {
  const length = 4 + sections.length * SECTION_INDEX_ENTRY_BYTES + 8;
  checkKeyedSnapshotLength(indexOffset + length, operatorName);
  const bytes = new Uint8Array(length);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, sections.length, true);
  let position = 4;
  for (const section of sections) {
    view.setUint32(position, section.keyGroup, true);
    view.setUint32(position + 4, section.offset, true);
    view.setUint32(position + 8, section.length, true);
    view.setUint32(position + 12, section.crc, true);
    position += SECTION_INDEX_ENTRY_BYTES;
  }
  view.setUint32(position, checksum(bytes.subarray(0, position)), true);
  view.setUint32(position + 4, indexOffset, true);
  return bytes;
}
