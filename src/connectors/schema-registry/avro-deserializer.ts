import type avscModule from 'avsc';
import { WeirError } from '../../core/errors/weir-error.ts';
import { type AvroSchema, avroType, avsc } from './avro-schema.ts';
import {
  failedDecoder,
  type PayloadDecoder,
  type RegistryDeserializer,
  type RegistryDeserializerOptions,
  registryDeserializer,
} from './registry-deserializer.ts';
import { type RegisteredSchema, registryClient } from './schema-registry-client.ts';
import { WIRE_HEADER_SIZE } from './wire-format.ts';

export interface AvroDeserializerOptions extends RegistryDeserializerOptions {
  /**
   * The schema the job reads with: each record is resolved from the schema it was written with
   * (Avro schema resolution: added fields take their defaults, removed ones are dropped), and a
   * record whose writer schema cannot be read so is a bad record. Default: each record's own schema.
   */
  readerSchema?: AvroSchema;
}

/**
 * A Kafka source deserializer for Avro in the Schema Registry wire format: `kafkaSource({
 * deserializer: avroDeserializer<Order>({ registry }) })` gives `Order`s. The schema of each id is
 * fetched once and kept as an Avro decoder (the hot path is a map lookup and a synchronous decode);
 * a record with a wrong magic byte, an id the registry does not know, or a payload that does not
 * decode throws, so the source's onDeserializationError policy (fail naming topic, partition and
 * offset; skip; dead letter) takes it as it takes any record its deserializer cannot read.
 */
export type AvroDeserializer<T> = RegistryDeserializer<T>;

export function avroDeserializer<T>(options: AvroDeserializerOptions): AvroDeserializer<T> {
  const registry = registryClient(options.registry);
  let readerType: avscModule.Type | undefined;
  if (options.readerSchema !== undefined) {
    try {
      readerType = avroType(options.readerSchema);
    } catch (error) {
      throw new WeirError('INVALID_SOURCE', `avroDeserializer readerSchema is not a valid Avro schema: ${(error as Error).message}`, {
        hint: 'pass readerSchema as an Avro schema (an object or its JSON text), or leave it out to read each record with its own schema',
      });
    }
  }
  const decoderOf = (schema: RegisteredSchema): PayloadDecoder<T> => {
    if (schema.schemaType !== 'AVRO') return failedDecoder(`schema id ${schema.id} is a ${schema.schemaType} schema, not Avro`);
    try {
      const writer = avsc().Type.forSchema(JSON.parse(schema.schema));
      return readerType === undefined ? avroDecoder(writer, undefined) : avroDecoder(readerType, readerType.createResolver(writer));
    } catch (error) {
      return failedDecoder(
        `the Avro schema of id ${schema.id} ${readerType === undefined ? 'does not parse' : 'cannot be read with the readerSchema'}: ${(error as Error).message}`,
      );
    }
  };
  return registryDeserializer<T>(registry, options.isKey === true, decoderOf);
}

/** One id's decoder: the payload after the header is exactly one record of `type` (read through `resolver` from the writer's schema). */
function avroDecoder<T>(type: avscModule.Type, resolver: ReturnType<avscModule.Type['createResolver']> | undefined): PayloadDecoder<T> {
  return {
    failure: undefined, // the shape of a failed decoder's: one hidden class at the hot path's check
    decode(bytes, id) {
      const { value, offset } = type.decode(bytes, WIRE_HEADER_SIZE, resolver);
      if (offset < 0) throw new Error(`the Avro payload (schema id ${id}) is truncated: ${bytes.length - WIRE_HEADER_SIZE} bytes do not hold a record`);
      if (offset !== bytes.length)
        throw new Error(`the Avro payload (schema id ${id}) has ${bytes.length - offset} bytes after its record: not written with this schema`);
      return value as T;
    },
  };
}
