import { readFileSync } from 'node:fs';
import { jsonSchemaDeserializer } from '../../connectors/schema-registry/json-schema-deserializer.ts';
import { jsonSchemaSerializer } from '../../connectors/schema-registry/json-schema-serializer.ts';
import { protobufDeserializer } from '../../connectors/schema-registry/protobuf-deserializer.ts';
import { protobufSerializer } from '../../connectors/schema-registry/protobuf-serializer.ts';
import type { RegistryDeserializer } from '../../connectors/schema-registry/registry-deserializer.ts';
import type { RegistrySerializer } from '../../connectors/schema-registry/registry-serializer.ts';
import type { SchemaRegistryClient } from '../../connectors/schema-registry/schema-registry-client.ts';
import type { SubjectNameStrategy } from '../../connectors/schema-registry/subject-name.ts';
import { WIRE_HEADER_SIZE } from '../../connectors/schema-registry/wire-format.ts';
import { WeirError } from '../../core/errors/weir-error.ts';

/** `weir produce`'s encoder of a key or a value line (Avro's is AvroLineEncoder). */
export interface LineEncoder {
  readonly subject: string;
  prepare(): Promise<number>;
  encode(line: string, where: string): Buffer;
}

/** `weir consume`'s decoder of keys or values: the record as one line of JSON. */
export interface RecordDecoder {
  prepare(messages: readonly (Buffer | null)[]): Promise<void>;
  decode(bytes: Buffer | null): string;
}

export interface LineEncoderOptions {
  registry: SchemaRegistryClient;
  schemaFile: string;
  /** The schema's flag (--schema, --key-schema), for messages. */
  flag: string;
  topic: string;
  isKey: boolean;
  autoRegister: boolean;
  subjectStrategy: SubjectNameStrategy;
  /** Protobuf: the message a line is (--message, --key-message); default the file's first message. */
  messageName?: string;
}

/** The schema file a --schema/--key-schema flag names, as text; one clear error when it cannot be read. */
export function readSchemaFile(flag: string, file: string, hint: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new WeirError('INVALID_CONFIG', `${flag} ${file}: ${(error as Error).message}`, { hint });
  }
}

/** The serializer's id looked up under its subject; a subject that does not hold the schema is refused in the CLI's words. */
export async function prepareForCli(serializer: { readonly subject: string; prepare(): Promise<number> }): Promise<number> {
  try {
    return await serializer.prepare();
  } catch (error) {
    if (error instanceof WeirError && / does not hold /.test(error.message))
      throw new WeirError('INVALID_CONFIG', error.message.replace(' the sink writes', '').replace('(autoRegister is off)', '(--auto-register is off)'), {
        hint: `register the schema under subject "${serializer.subject}" first, or pass --auto-register to register it (the registry checks the subject's compatibility rule)`,
      });
    throw error;
  }
}

/** Fetches, at once, the schemas of the ids among `messages` (registry wire format) not known yet; bad messages are left to decode. */
export async function fetchUnknownSchemas(
  registry: SchemaRegistryClient,
  messages: readonly (Buffer | null)[],
  withReferences: boolean,
  known: (id: number) => boolean = () => false,
): Promise<void> {
  const missing = new Set<number>();
  for (const bytes of messages) {
    if (bytes === null || bytes.length < WIRE_HEADER_SIZE || bytes[0] !== 0) continue;
    const id = bytes.readInt32BE(1);
    if (!known(id) && registry.cached(id) === undefined && !registry.knownUnknown(id)) missing.add(id);
  }
  await Promise.all(
    [...missing].map(async (id) => {
      const schema = await registry.schemaById(id);
      if (withReferences && schema !== undefined) await registry.references(schema);
    }),
  );
}

/**
 * `weir produce --value-format protobuf --schema order.proto [--message Order]` or `--value-format
 * json-schema --schema order.json`: each line a JSON record, written in the registry's wire
 * format under the schema the file holds (its subject must hold it, or --auto-register). Protobuf
 * lines take what `weir consume` prints: int64 as strings or numbers, enums by name, bytes as base64.
 */
export function registryLineEncoder(format: 'protobuf' | 'json-schema', options: LineEncoderOptions): LineEncoder {
  const what = options.isKey ? 'key' : 'value';
  const text = readSchemaFile(options.flag, options.schemaFile, `give a readable ${format === 'protobuf' ? '.proto file' : 'JSON Schema file'}`);
  const common = {
    registry: options.registry,
    topic: options.topic,
    isKey: options.isKey,
    autoRegister: options.autoRegister,
    subjectStrategy: options.subjectStrategy,
  };
  let serializer: RegistrySerializer<unknown>;
  try {
    serializer =
      format === 'protobuf'
        ? protobufSerializer({ ...common, schema: text, ...(options.messageName === undefined ? {} : { messageName: options.messageName }) })
        : jsonSchemaSerializer({ ...common, schema: text });
  } catch (error) {
    throw new WeirError(
      'INVALID_CONFIG',
      `${options.flag} ${options.schemaFile}: ${(error as Error).message.replace(/^(protobufSerializer|jsonSchemaSerializer) /, '')}`,
      {
        hint:
          format === 'protobuf'
            ? 'give a .proto file (proto3 or proto2) and, with --message, one of its messages'
            : 'give a JSON Schema (draft-07, 2019-09 or 2020-12) as JSON',
      },
    );
  }
  return {
    subject: serializer.subject,
    prepare: () => prepareForCli(serializer),
    encode(line, where) {
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch (error) {
        throw new WeirError('INVALID_CONFIG', `${where}: the ${what} is not JSON: ${(error as Error).message}`, {
          hint: `write each ${what} as a JSON record of the schema`,
        });
      }
      try {
        return serializer(record);
      } catch (error) {
        throw new WeirError('INVALID_CONFIG', `${where}: the ${what} ${(error as Error).message.replace(/^the record /, '')}`, {
          hint: `write each ${what} as a JSON record the schema accepts`,
        });
      }
    },
  };
}

/** Bytes as base64 in the printed JSON (what protobufjs takes back for a bytes field). */
function withBase64(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  return raw instanceof Uint8Array ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64') : value;
}

/** `weir consume --value-format protobuf|json-schema`: registry wire-format bytes as one line of JSON, each schema fetched once. */
export function registryRecordDecoder(format: 'protobuf' | 'json-schema', registry: SchemaRegistryClient): RecordDecoder {
  const deserializer: RegistryDeserializer<unknown> = format === 'protobuf' ? protobufDeserializer({ registry }) : jsonSchemaDeserializer({ registry });
  return {
    prepare: (messages) => fetchUnknownSchemas(registry, messages, true),
    decode(bytes) {
      return JSON.stringify(deserializer.decode(bytes), format === 'protobuf' ? withBase64 : undefined);
    },
  };
}
