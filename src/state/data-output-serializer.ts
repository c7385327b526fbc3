/**
 * A growable little-endian byte writer for snapshots (Flink's `DataOutputSerializer`).
 */
export class DataOutputSerializer {
  #buffer: Buffer;
  #position = 0;

  constructor(initialCapacity = 1024) {
    this.#buffer = Buffer.alloc(initialCapacity);
  }

  get length(): number {
    return this.#position;
  }

  #ensure(bytes: number): void {
    const needed = this.#position + bytes;
    if (needed <= this.#buffer.length) return;
    const grown = Buffer.alloc(Math.max(needed, this.#buffer.length * 2));
    this.#buffer.copy(grown, 0, 0, this.#position);
    this.#buffer = grown;
  }

  writeUint8(value: number): void {
    this.#ensure(1);
    this.#buffer[this.#position++] = value;
  }

  writeUint16(value: number): void {
    this.#ensure(2);
    this.#position = this.#buffer.writeUInt16LE(value, this.#position);
  }

  writeUint32(value: number): void {
    this.#ensure(4);
    this.#position = this.#buffer.writeUInt32LE(value, this.#position);
  }

  writeInt32(value: number): void {
    this.#ensure(4);
    this.#position = this.#buffer.writeInt32LE(value, this.#position);
  }

  writeFloat64(value: number): void {
    this.#ensure(8);
    this.#position = this.#buffer.writeDoubleLE(value, this.#position);
  }

  writeBytes(bytes: Uint8Array): void {
    this.#ensure(bytes.length);
    this.#buffer.set(bytes, this.#position);
    this.#position += bytes.length;
  }

  /** uint32 byte length, then the UTF-8 bytes. */
  writeString(text: string): void {
    const length = Buffer.byteLength(text, 'utf8');
    this.writeUint32(length);
    this.#ensure(length);
    this.#position += this.#buffer.write(text, this.#position, 'utf8');
  }

  /** uint32 byte length, then the bytes. */
  writeBlob(bytes: Uint8Array): void {
    this.writeUint32(bytes.length);
    this.writeBytes(bytes);
  }

  /** Overwrites the uint32 at `offset` (written earlier as a placeholder). */
  setUint32At(offset: number, value: number): void {
    this.#buffer.writeUInt32LE(value, offset);
  }

  /** The bytes written so far, as a view of the internal buffer. */
  view(start = 0, end = this.#position): Uint8Array {
    return this.#buffer.subarray(start, end);
  }

  /** A copy of the bytes written, sized exactly. */
  toUint8Array(): Uint8Array {
    return new Uint8Array(this.#buffer.buffer.slice(this.#buffer.byteOffset, this.#buffer.byteOffset + this.#position));
  }
}
