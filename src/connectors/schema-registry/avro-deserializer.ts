import type avscModule from 'avsc';
import type { PreflightFinding } from '../../core/connector/preflight.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { TopicRecord } from '../kafka/topic-record.ts';
import { type AvroSchema, avroType, avsc } from './avro-schema.ts';
import { type RegisteredSchema, registryClient, type SchemaRegistryClient } from './schema-registry-client.ts';
import type { SchemaRegistrySettings } from './schema-registry-settings.ts';
import { readSchemaId, WIRE_HEADER_SIZE } from './wire-format.ts';

export interface AvroDeserializerOptions {
  /** The registry (a `schemaRegistry(...)` client, shared so its cache is, or its settings). */
  registry: SchemaRegistryClient | SchemaRegistrySettings;
  /** Decode the record's key rather than its value. Default false. */
  isKey?: boolean;
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
export interface AvroDeserializer<T> {
  (record: TopicRecord): T;
  /** Decodes one wire-format message (for a deserializer of your own that reads key and value). */
  decode(bytes: Buffer | null): T;
  /** Fetches the schemas of the ids in `records` not cached yet, all at once; undefined (no promise) when every id is cached. */
  prepare(records: readonly TopicRecord[]): Promise<void> | undefined;
  /** At start: whether the registry answers (see `withSchemaRegistry`). */
  preflight(where: string): Promise<PreflightFinding[]>;
  readonly registry: SchemaRegistryClient;
}

interface Decoder {
  type: avscModule.Type;
  resolver: ReturnType<avscModule.Type['createResolver']> | undefined;
  /** Set when records of this id cannot be read (a schema that is not Avro, or that the reader schema cannot resolve). */
  failure: string | undefined;
}

export function avroDeserializer<T>(options: AvroDeserializerOptions): AvroDeserializer<T> {
  const registry = registryClient(options.registry);
  const isKey = options.isKey === true;
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
  const decoders = new Map<number, Decoder>();

  const decoderOf = (schema: RegisteredSchema): Decoder => {
    if (schema.schemaType !== 'AVRO') {
      return { type: avsc().Type.forSchema('null'), resolver: undefined, failure: `schema id ${schema.id} is a ${schema.schemaType} schema, not Avro` };
    }
    try {
      const writer = avsc().Type.forSchema(JSON.parse(schema.schema));
      if (readerType === undefined) return { type: writer, resolver: undefined, failure: undefined };
      return { type: readerType, resolver: readerType.createResolver(writer), failure: undefined };
    } catch (error) {
      return {
        type: avsc().Type.forSchema('null'),
        resolver: undefined,
        failure: `the Avro schema of id ${schema.id} ${readerType === undefined ? 'does not parse' : 'cannot be read with the readerSchema'}: ${(error as Error).message}`,
      };
    }
  };

  const decoderFor = (id: number): Decoder => {
    let decoder = decoders.get(id);
    if (decoder !== undefined) return decoder;
    // A cache miss inside the synchronous loop: one blocking request (prepare() avoids it).
    const schema = registry.cached(id) ?? registry.schemaByIdSync(id);
    if (schema === undefined) throw new Error(`schema id ${id} is unknown to ${registry} (written against another registry, or its schema was deleted)`);
    decoder = decoderOf(schema);
    decoders.set(id, decoder);
    return decoder;
  };

  const decode = (bytes: Buffer | null): T => {
    const id = readSchemaId(bytes);
    const decoder = decoderFor(id);
    if (decoder.failure !== undefined) throw new Error(decoder.failure);
    const { value, offset } = decoder.type.decode(bytes as Buffer, WIRE_HEADER_SIZE, decoder.resolver);
    if (offset < 0)
      throw new Error(`the Avro payload (schema id ${id}) is truncated: ${(bytes as Buffer).length - WIRE_HEADER_SIZE} bytes do not hold a record`);
    if (offset !== (bytes as Buffer).length)
      throw new Error(`the Avro payload (schema id ${id}) has ${(bytes as Buffer).length - offset} bytes after its record: not written with this schema`);
    return value as T;
  };

  const deserializer = ((record: TopicRecord) => decode(isKey ? record.key : record.value)) as AvroDeserializer<T>;
  deserializer.decode = decode;
  deserializer.prepare = (records) => {
    let missing: Set<number> | undefined;
    for (const record of records) {
      const bytes = isKey ? record.key : record.value;
      if (bytes === null || bytes.length < WIRE_HEADER_SIZE || bytes[0] !== 0) continue; // a bad record: decode says why
      const id = bytes.readInt32BE(1);
      if (decoders.has(id) || registry.cached(id) !== undefined || registry.knownUnknown(id)) continue;
      missing ??= new Set();
      missing.add(id);
    }
    if (missing === undefined) return undefined;
    return Promise.all([...missing].map((id) => registry.schemaById(id))).then(() => undefined);
  };
  deserializer.preflight = async (where) => {
    try {
      await registry.ping();
      return [];
    } catch (error) {
      return [{ level: 'error', where, message: `${where}: ${(error as Error).message}`, hint: (error as WeirError).hint }];
    }
  };
  Object.defineProperty(deserializer, 'registry', { value: registry });
  return deserializer;
}
