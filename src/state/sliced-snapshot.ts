import { crc32 } from 'node:zlib';
import type { AsyncKeyedStateSnapshot } from '../core/state/keyed-state-backend.ts';
import type { DataOutputSerializer } from './data-output-serializer.ts';
import { SnapshotPieces } from './snapshot-pieces.ts';
import { checkKeyedSnapshotLength, type KeyedSectionEntry, keyedSnapshotIndex, keyedSnapshotPrefix } from './state-snapshot-format.ts';

/** One state's entries in a key group's section: its index in the header, its entry count, a v8 blob per chunk. */
export interface TableSection {
  stateIndex: number;
  count: number;
  blobs: Uint8Array[];
}

/**
 * What both backends' asynchronous snapshot writers share (KeyedStateSnapshotWriter for the heap,
 * LmdbSnapshotWriter for the disk): written slice by slice between the task's turns, each
 * {@link step} going on until its time budget is spent; a failure gives the snapshot up (releasing
 * what it held) and is what {@link result} throws. A subclass begins with {@link begin} (the
 * header), writes a section per key group with {@link writeSection} in {@link advance}, and frees
 * what it holds in {@link free}, once.
 *
 * The snapshot is a stream of pieces (format version 6: the key-group index at the end), so it
 * need not be held whole: {@link drain} takes the pieces written so far, for the storage to write
 * as they come (a checkpoint's asynchronous part); {@link result} is the whole snapshot for a
 * caller that drained nothing.
 */
export abstract class SlicedSnapshot implements AsyncKeyedStateSnapshot {
  readonly #operatorName: string;
  /** The pieces, and how the snapshot ended; its length is the next section's offset. */
  readonly #out: SnapshotPieces;
  readonly #sections: KeyedSectionEntry[] = [];
  #ended = false;

  constructor(operatorName: string) {
    this.#operatorName = operatorName;
    this.#out = new SnapshotPieces(operatorName);
  }

  /** Whether the snapshot is written (or given up). */
  get done(): boolean {
    return this.#ended;
  }

  /** Writes on for about `budgetMs`; returns whether the snapshot is complete. A state that cannot be serialized throws (and gives the snapshot up). */
  step(budgetMs: number): boolean {
    if (this.#ended) return true;
    const until = performance.now() + budgetMs;
    try {
      do {
        if (this.advance(until)) {
          this.#end();
          this.#out.complete = true;
          this.release();
          return true;
        }
      } while (performance.now() < until);
    } catch (error) {
      this.#out.failure = error;
      this.release();
      throw error;
    }
    return false;
  }

  /** Writes what is left at once (a synchronous snapshot, or a new barrier while this one is pending). */
  runToEnd(): void {
    while (!this.step(Number.POSITIVE_INFINITY));
  }

  /** The pieces written since the last call, in order (the caller owns them now); the snapshot is then never whole. */
  drain(): Uint8Array[] {
    return this.#out.drain();
  }

  /** Throws the error the snapshot failed with, or CHECKPOINT_NOT_COMPLETED when it was given up or is still being written. */
  assertComplete(): void {
    this.#out.assertComplete();
  }

  /** The whole snapshot, once complete, when nothing was drained; the error it failed with, if it failed. */
  result(): Uint8Array {
    return this.#out.result();
  }

  /** Gives the snapshot up (or it is written): what it holds is freed, once. */
  release(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!this.#out.complete) this.#out.drop();
    this.free();
  }

  /** The header (magic, version, range, flags, states), then its checksum: the snapshot's first piece. */
  protected begin(header: DataOutputSerializer): void {
    this.#out.push(keyedSnapshotPrefix(header));
  }

  /** Key group `keyGroup`'s section, as pieces: its place and checksum go into the index. */
  protected writeSection(keyGroup: number, pieces: readonly Uint8Array[]): void {
    const offset = this.#out.length;
    let crc = 0;
    for (const piece of pieces) {
      crc = crc32(piece, crc);
      this.#out.push(piece);
    }
    this.#sections.push({ keyGroup, offset, length: this.#out.length - offset, crc: crc >>> 0 });
    checkKeyedSnapshotLength(this.#out.length, this.#operatorName);
  }

  /** Writes a piece; returns true once every key group is written (`until`: the slice's end, for long pieces). */
  protected abstract advance(until: number): boolean;

  /** Frees what the snapshot holds (called once, by {@link release}). */
  protected abstract free(): void;

  /** The index of the sections, its checksum and its offset: the snapshot's last piece. */
  #end(): void {
    this.#out.push(keyedSnapshotIndex(this.#sections, this.#out.length, this.#operatorName));
  }
}

/**
 * A key group's section as pieces (format in keyed-state-snapshot.ts): its states' chunks, then its
 * processing-time and event-time timers, each a count and a v8 blob (none: 0, 0).
 */
export function sectionPieces(tableSections: readonly TableSection[], timers: readonly [number, Uint8Array | undefined][]): Uint8Array[] {
  const pieces: Uint8Array[] = [uint32s(tableSections.length)];
  for (const section of tableSections) {
    pieces.push(uint32s(section.stateIndex, section.count, section.blobs.length));
    for (const blob of section.blobs) pieces.push(uint32s(blob.length), blob);
  }
  for (const [count, blob] of timers) {
    if (blob === undefined) pieces.push(uint32s(0, 0));
    else pieces.push(uint32s(count, blob.length), blob);
  }
  return pieces;
}

/** Little-endian uint32s, as a piece of a section. */
function uint32s(...values: number[]): Uint8Array {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) view.setUint32(i * 4, values[i] as number, true);
  return bytes;
}
