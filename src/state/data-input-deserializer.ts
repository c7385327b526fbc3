import { WeirError } from '../core/errors/weir-error.ts';

/**
 * A bounds-checked little-endian byte reader for snapshots (Flink's `DataInputDeserializer`). Reading
 * past the end, or a length that does not fit, is a `STATE_SNAPSHOT_CORRUPT` error naming `source`.
 */
export class DataInputDeserializer {
  readonly source: string;
  readonly #bytes: Buffer;
  position: number;
  readonly #end: number;

  constructor(bytes: Uint8Array, source: string, start = 0, end = bytes.length) {
    this.#bytes = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.source = source;
    this.position = start;
    this.#end = end;
  }

  get remaining(): number {
    return this.#end - this.position;
  }

  #take(count: number, what: string): number {
    const at = this.position;
    if (count > this.#end - at) throw this.corrupt(`it ends inside ${what} (at byte ${at}, ${count} bytes needed, ${this.#end - at} left)`);
    this.position = at + count;
    return at;
  }

  readUint8(what: string): number {
    return this.#bytes[this.#take(1, what)]!;
  }

  readUint16(what: string): number {
    return this.#bytes.readUInt16LE(this.#take(2, what));
  }

  readUint32(what: string): number {
    return this.#bytes.readUInt32LE(this.#take(4, what));
  }

  readInt32(what: string): number {
    return this.#bytes.readInt32LE(this.#take(4, what));
  }

  readFloat64(what: string): number {
    return this.#bytes.readDoubleLE(this.#take(8, what));
  }

  /** A view of the next `count` bytes. */
  readBytes(count: number, what: string): Buffer {
    const at = this.#take(count, what);
    return this.#bytes.subarray(at, at + count);
  }

  readString(what: string): string {
    const length = this.readUint32(what);
    return this.readBytes(length, what).toString('utf8');
  }

  readBlob(what: string): Buffer {
    return this.readBytes(this.readUint32(what), what);
  }

  /** A view of bytes `[start, end)` of the whole input, without moving. */
  slice(start: number, end: number): Buffer {
    return this.#bytes.subarray(start, end);
  }

  /** The error for a snapshot that is not what it should be. */
  corrupt(problem: string, cause?: unknown): WeirError {
    return new WeirError('STATE_SNAPSHOT_CORRUPT', `${this.source} is corrupt: ${problem}`, {
      fault: 'external',
      hint: 'the checkpoint file was truncated or altered; restore from another checkpoint or savepoint',
      cause,
    });
  }
}
