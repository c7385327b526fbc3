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
