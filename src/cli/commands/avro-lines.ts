import type avscModule from 'avsc';
import { avroType, avsc } from '../../connectors/schema-registry/avro-schema.ts';
import { type AvroSerializer, avroSerializer } from '../../connectors/schema-registry/avro-serializer.ts';
import type { SchemaRegistryClient } from '../../connectors/schema-registry/schema-registry-client.ts';
import type { SubjectNameStrategy } from '../../connectors/schema-registry/subject-name.ts';
import { readSchemaId, WIRE_HEADER_SIZE } from '../../connectors/schema-registry/wire-format.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { fetchUnknownSchemas, prepareForCli, readSchemaFile } from './registry-lines.ts';

/**
 * `weir produce --value-format avro`: a JSON line as an Avro record in the registry wire format.
 * A line is the record as plain JSON (`{"id": 1, "note": "x"}`) or in Avro's JSON encoding (what
 * `weir consume` prints, unions wrapped: `{"note": {"string": "x"}}`, bytes as \u00XX strings).
 */
export class AvroLineEncoder {
  readonly subject: string;
  readonly #type: avscModule.Type;
  readonly #serializer: AvroSerializer<unknown>;
  readonly #what: string;

  constructor(options: {
    registry: SchemaRegistryClient;
    schemaFile: string;
    flag: string;
    topic: string;
    isKey: boolean;
    autoRegister: boolean;
    subjectStrategy: SubjectNameStrategy;
  }) {
    this.#what = options.isKey ? 'key' : 'value';
    const text = readSchemaFile(options.flag, options.schemaFile, 'give a readable Avro schema file (.avsc: the schema as JSON)');
    try {
      this.#type = avroType(text);
    } catch (error) {
      throw new WeirError('INVALID_CONFIG', `${options.flag} ${options.schemaFile} is not an Avro schema: ${(error as Error).message}`, {
        hint: 'give an Avro schema as JSON, e.g. {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}',
      });
    }
    this.#serializer = avroSerializer({
      registry: options.registry,
      schema: text,
      topic: options.topic,
      isKey: options.isKey,
      autoRegister: options.autoRegister,
      subjectStrategy: options.subjectStrategy,
    });
    this.subject = this.#serializer.subject;
  }

  /** Looks the schema's id up under its subject (registering it with --auto-register); refuses, naming the subject, when it does not hold it. */
  prepare(): Promise<number> {
    return prepareForCli(this.#serializer);
  }

  /** The line's record in the wire format; a line the schema does not fit is one error naming the line and the fields. */
  encode(line: string, where: string): Buffer {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch (error) {
      throw this.#invalid(where, `is not JSON: ${(error as Error).message}`);
    }
    if (!this.#type.isValid(record)) {
      try {
        record = this.#type.fromString(line); // Avro's JSON encoding (wrapped unions, bytes as strings)
      } catch {
        const problems: string[] = [];
        this.#type.isValid(record, {
          errorHook: (path, value, type) => {
            if (problems.length < 5)
              problems.push(`${path.length === 0 ? 'the record' : path.join('.')}: ${JSON.stringify(value) ?? 'missing'} is not ${type}`);
          },
        });
        throw this.#invalid(where, `does not fit the schema: ${problems.join('; ')}`);
      }
    }
    return this.#serializer(record);
  }

  #invalid(where: string, what: string): WeirError {
    return new WeirError('INVALID_CONFIG', `${where}: the ${this.#what} ${what}`, {
      hint: `write each ${this.#what} as a JSON object of the schema (plain JSON, or Avro's JSON encoding as \`weir consume\` prints it)`,
    });
  }
}

/** `weir consume --value-format avro`: registry wire-format bytes as Avro's JSON encoding, each schema id fetched once. */
export class AvroRecordDecoder {
  readonly #registry: SchemaRegistryClient;
  readonly #types = new Map<number, avscModule.Type>();

  constructor(registry: SchemaRegistryClient) {
    this.#registry = registry;
  }

  /** Fetches the schemas of the ids among `messages` not known yet, at once (bad messages are left to decode). */
  prepare(messages: readonly (Buffer | null)[]): Promise<void> {
    return fetchUnknownSchemas(this.#registry, messages, false, (id) => this.#types.has(id));
  }

  /** The record as Avro's JSON encoding (a JSON text); throws, saying why, when the bytes are not a record of a registered Avro schema. */
  decode(bytes: Buffer | null): string {
    const id = readSchemaId(bytes);
    const message = bytes as Buffer;
    let type = this.#types.get(id);
    if (type === undefined) {
      const schema = this.#registry.cached(id);
      if (schema === undefined) throw new Error(`schema id ${id} is unknown to ${this.#registry}`);
      if (schema.schemaType !== 'AVRO') throw new Error(`schema id ${id} is a ${schema.schemaType} schema, not Avro`);
      type = avsc().Type.forSchema(JSON.parse(schema.schema));
      this.#types.set(id, type);
    }
    const { value, offset } = type.decode(message, WIRE_HEADER_SIZE);
    if (offset !== message.length) throw new Error(`the Avro payload (schema id ${id}) does not decode as its schema's record`);
    return type.toString(value);
  }
}
