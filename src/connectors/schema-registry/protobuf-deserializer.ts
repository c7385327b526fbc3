import type protobufModule from 'protobufjs';
import { messageAt, type ParsedProto, parseProto, protobuf } from './protobuf-schema.ts';
import { failedDecoder, type RegistryDeserializer, type RegistryDeserializerOptions, registryDeserializer } from './registry-deserializer.ts';
import { registryClient } from './schema-registry-client.ts';
import { readMessageIndexes, WIRE_HEADER_SIZE } from './wire-format.ts';

export interface ProtobufDeserializerOptions extends RegistryDeserializerOptions {
  /**
   * How 64-bit integers (int64, uint64, sint64, fixed64, sfixed64) come out: 'string' (the
   * default: exact decimal text, as Protobuf's JSON mapping writes them) or 'number' (a JS
   * number: exact up to 2^53 only).
   */
  longs?: 'string' | 'number';
}

/**
 * The decoded record: plain objects, field names as the .proto writes them; every field present
 * (proto3 defaults filled in: 0, '', false, [], {}; an unset message field is null), except unset
 * `optional` fields and unset oneof members; 64-bit integers as `longs` says; enums by name (an unknown number stays a
 * number); bytes as Buffers; nested messages (google.protobuf.Timestamp too: `{ seconds, nanos }`)
 * as objects.
 */
export type ProtobufDeserializer<T> = RegistryDeserializer<T>;

/**
 * A Kafka source deserializer for Protobuf in the Schema Registry wire format (Confluent's: the
 * header, the message indexes naming the message type in the schema's file, the Protobuf bytes):
 * `kafkaSource({ deserializer: protobufDeserializer<Order>({ registry }) })`. The .proto of each
 * id is fetched once (with the schemas it references: other subjects' .proto files it imports;
 * Google's well-known types need none) and parsed with protobufjs; a record with a wrong magic
 * byte, an unknown id, message indexes the schema does not have or bytes that do not decode
 * throws, so the source's onDeserializationError policy takes it.
 */
export function protobufDeserializer<T>(options: ProtobufDeserializerOptions): ProtobufDeserializer<T> {
  const registry = registryClient(options.registry);
  const conversion: protobufModule.IConversionOptions = {
    longs: options.longs === 'number' ? Number : String,
    enums: String,
    defaults: true,
    arrays: true,
    objects: true,
  };
  return registryDeserializer<T>(registry, options.isKey === true, (schema, references) => {
    if (schema.schemaType !== 'PROTOBUF') return failedDecoder(`schema id ${schema.id} is a ${schema.schemaType} schema, not Protobuf`);
    let proto: ParsedProto;
    try {
      proto = parseProto(schema.schema, references);
    } catch (error) {
      return failedDecoder(`the Protobuf schema of id ${schema.id} does not parse: ${(error as Error).message}`);
    }
    const byIndexes = new Map<string, protobufModule.Type>(); // "0" -> the file's first message, "1,0" -> ...
    const typeAt = (indexes: number[], id: number): protobufModule.Type => {
      const key = indexes.length === 1 ? String(indexes[0]) : indexes.join(',');
      let type = byIndexes.get(key);
      if (type === undefined) {
        try {
          type = messageAt(proto, indexes);
        } catch (error) {
          throw new Error(`schema id ${id}: ${(error as Error).message}`);
        }
        byIndexes.set(key, type);
      }
      return type;
    };
    return {
      decode(bytes, id) {
        // The common case, [0] as one 0 byte, without the general reader.
        const simple = bytes.length > WIRE_HEADER_SIZE && bytes[WIRE_HEADER_SIZE] === 0;
        const { indexes, offset } = simple ? { indexes: [0], offset: WIRE_HEADER_SIZE + 1 } : readMessageIndexes(bytes, WIRE_HEADER_SIZE);
        const type = typeAt(indexes, id);
        let message: protobufModule.Message;
        try {
          message = type.decode(protobuf().Reader.create(bytes.subarray(offset)));
        } catch (error) {
          throw new Error(`the Protobuf payload (schema id ${id}, message ${type.fullName.slice(1)}) does not decode: ${(error as Error).message}`);
        }
        return type.toObject(message, conversion) as T;
      },
    };
  });
}
