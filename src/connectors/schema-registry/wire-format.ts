/**
 * The Schema Registry wire format (Confluent's, which Apicurio's ccompat and Karapace speak too):
 * a magic byte 0, the schema id as 4 bytes big-endian, then the payload in the schema's encoding.
 */
export const MAGIC_BYTE = 0;
export const WIRE_HEADER_SIZE = 5;

/** The schema id of a wire-format message; throws (naming what is wrong) when it is not one. */
export function readSchemaId(bytes: Buffer | null): number {
  if (bytes === null) throw new Error('the record has no bytes (null) where a Schema Registry message was expected');
  if (bytes.length < WIRE_HEADER_SIZE)
    throw new Error(`${bytes.length} bytes are too few for a Schema Registry message (a magic byte 0, a 4-byte schema id, the payload)`);
  if (bytes[0] !== MAGIC_BYTE)
    throw new Error(`unknown magic byte ${bytes[0]} (a Schema Registry message starts with 0): not written in the registry's wire format`);
  return bytes.readInt32BE(1);
}

/** Writes the header (magic byte, schema id) at the start of `into`. */
export function writeWireHeader(into: Buffer, schemaId: number): void {
  into[0] = MAGIC_BYTE;
  into.writeInt32BE(schemaId, 1);
}

/**
 * Protobuf messages carry, after the header, the message indexes: the path from the .proto file to
 * the message type the payload is (the index among the file's top-level messages, then among that
 * message's nested messages, ...), as a count then each index, every number a zigzag varint
 * (Kafka's ByteUtils.writeVarint). The common case [0] (the file's first message) is the single
 * byte 0, as Confluent's serializers write it (a count of 0 reads as [0]).
 */
export function messageIndexesBytes(indexes: readonly number[]): Buffer {
  if (indexes.length === 0 || (indexes.length === 1 && indexes[0] === 0)) return Buffer.from([0]);
  const out: number[] = [];
  writeZigzagVarint(out, indexes.length);
  for (const index of indexes) {
    if (!Number.isInteger(index) || index < 0) throw new Error(`message index ${index} is not a non-negative integer`);
    writeZigzagVarint(out, index);
  }
  return Buffer.from(out);
}

/** The message indexes at `offset` (after the header) and where the payload starts; throws, naming what is wrong, when they do not read. */
export function readMessageIndexes(bytes: Buffer, offset: number): { indexes: number[]; offset: number } {
  const count = readZigzagVarint(bytes, offset);
  let at = count.offset;
  if (count.value === 0) return { indexes: [0], offset: at };
  if (count.value < 0 || count.value > bytes.length - at)
    throw new Error(`the message indexes (count ${count.value}) do not fit the ${bytes.length - offset} bytes after the header: not Protobuf of the registry`);
  const indexes = new Array<number>(count.value);
  for (let i = 0; i < count.value; i++) {
    const index = readZigzagVarint(bytes, at);
    if (index.value < 0) throw new Error(`message index ${index.value} is negative: not Protobuf of the registry`);
    indexes[i] = index.value;
    at = index.offset;
  }
  return { indexes, offset: at };
}

function writeZigzagVarint(out: number[], value: number): void {
  let unsigned = ((value << 1) ^ (value >> 31)) >>> 0;
  while (unsigned > 0x7f) {
    out.push((unsigned & 0x7f) | 0x80);
    unsigned >>>= 7;
  }
  out.push(unsigned);
}

function readZigzagVarint(bytes: Buffer, offset: number): { value: number; offset: number } {
  let unsigned = 0;
  for (let shift = 0, at = offset; shift < 35; shift += 7, at++) {
    if (at >= bytes.length) throw new Error('the message indexes are truncated: not Protobuf of the registry');
    const byte = bytes[at] as number;
    unsigned |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value: (unsigned >>> 1) ^ -(unsigned & 1), offset: at + 1 };
  }
  throw new Error('a message index varint is longer than 5 bytes: not Protobuf of the registry');
}
