import type { PreflightFinding } from '../../core/connector/preflight.ts';
import type { WeirError } from '../../core/errors/weir-error.ts';
import type { TopicRecord } from '../kafka/topic-record.ts';
import type { RegisteredSchema, ResolvedReference, SchemaRegistryClient } from './schema-registry-client.ts';
import type { SchemaRegistrySettings } from './schema-registry-settings.ts';
import { readSchemaId, WIRE_HEADER_SIZE } from './wire-format.ts';

/** How one schema id's records decode: `decode(bytes, id)` reads the payload after the 5-byte header (throws saying why), or `failure` says why no record of the id can be read. */
export interface PayloadDecoder<T> {
  decode(bytes: Buffer, id: number): T;
  failure?: string;
}

/** The decoder of an id none of whose records can be read: `failure` says why. */
export function failedDecoder<T>(failure: string): PayloadDecoder<T> {
  return { decode: failed, failure };
}

/** What every registry deserializer takes (Avro's, Protobuf's, JSON Schema's). */
export interface RegistryDeserializerOptions {
  /** The registry (a `schemaRegistry(...)` client, shared so its cache is, or its settings). */
  registry: SchemaRegistryClient | SchemaRegistrySettings;
  /** Decode the record's key rather than its value. Default false. */
  isKey?: boolean;
}

/**
 * A Kafka source deserializer for one format in the Schema Registry wire format (Avro, Protobuf,
 * JSON Schema): callable on a record (its value, or key), with `decode` for bytes, `prepare` (the
 * reader's hook: the schemas of a batch's unknown ids, and what they reference, fetched at once
 * before the batch's first record) and `preflight` (the registry answers at start).
 */
export interface RegistryDeserializer<T> {
  (record: TopicRecord): T;
  /** Decodes one wire-format message (for a deserializer of your own that reads key and value). */
  decode(bytes: Buffer | null): T;
  /** Fetches the schemas of the ids in `records` not cached yet, all at once; undefined (no promise) when every id is cached. */
  prepare(records: readonly TopicRecord[]): Promise<void> | undefined;
  /** At start: whether the registry answers (see `withSchemaRegistry`). */
  preflight(where: string): Promise<PreflightFinding[]>;
  readonly registry: SchemaRegistryClient;
}

/**
 * The shared machinery: an id's decoder is built once (`decoderOf`, from the id's schema and the
 * schemas it references) and kept, so the hot path is a map lookup and a synchronous decode; a
 * cache miss inside the loop (prepare not called) is one blocking request per id. A record with a
 * wrong magic byte, an unknown id or a payload that does not decode throws: the source's
 * onDeserializationError policy takes it.
 */
export function registryDeserializer<T>(
  registry: SchemaRegistryClient,
  isKey: boolean,
  decoderOf: (schema: RegisteredSchema, references: ResolvedReference[]) => PayloadDecoder<T>,
): RegistryDeserializer<T> {
  const decoders = new Map<number, PayloadDecoder<T>>();

  const build = (schema: RegisteredSchema, references: () => ResolvedReference[]): PayloadDecoder<T> => {
    let resolved: ResolvedReference[];
    try {
      resolved = references();
    } catch (error) {
      if ((error as WeirError).retriable === true) throw error; // the registry down: not this record's fault
      return failedDecoder((error as Error).message);
    }
    return decoderOf(schema, resolved);
  };

  const decoderFor = (id: number): PayloadDecoder<T> => {
    let decoder = decoders.get(id);
    if (decoder !== undefined) return decoder;
    // A cache miss inside the synchronous loop: one blocking request (prepare() avoids it).
    const schema = registry.cached(id) ?? registry.schemaByIdSync(id);
    if (schema === undefined) throw new Error(`schema id ${id} is unknown to ${registry} (written against another registry, or its schema was deleted)`);
    decoder = build(schema, () => registry.referencesSync(schema));
    decoders.set(id, decoder);
    return decoder;
  };

  const decode = (bytes: Buffer | null): T => {
    const id = readSchemaId(bytes);
    const decoder = decoderFor(id);
    if (decoder.failure !== undefined) throw new Error(decoder.failure);
    return decoder.decode(bytes as Buffer, id);
  };

  const deserializer = ((record: TopicRecord) => decode(isKey ? record.key : record.value)) as RegistryDeserializer<T>;
  deserializer.decode = decode;
  deserializer.prepare = (records) => {
    let missing: Set<number> | undefined;
    for (const record of records) {
      const bytes = isKey ? record.key : record.value;
      if (bytes === null || bytes.length < WIRE_HEADER_SIZE || bytes[0] !== 0) continue; // a bad record: decode says why
      const id = bytes.readInt32BE(1);
      if (decoders.has(id) || registry.knownUnknown(id)) continue;
      const cached = registry.cached(id);
      if (cached !== undefined && registry.referencesCached(cached)) continue;
      missing ??= new Set();
      missing.add(id);
    }
    if (missing === undefined) return undefined;
    return Promise.all(
      [...missing].map(async (id) => {
        const schema = await registry.schemaById(id);
        if (schema === undefined) return;
        try {
          await registry.references(schema);
        } catch (error) {
          if ((error as WeirError).retriable === true) throw error;
          // A reference the registry does not hold: decode builds the failing decoder and says so per record.
        }
      }),
    ).then(() => undefined);
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

function failed(): never {
  throw new Error('unreachable: a failed decoder is not called');
}
