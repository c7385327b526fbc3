import type protobufModule from 'protobufjs';
import { WeirError } from '../../core/errors/weir-error.ts';
import { protobufRecordProblem } from './protobuf-record-check.ts';
import { indexesOf, messageNamed, type ParsedProto, parseProto } from './protobuf-schema.ts';
import { type RegistrySerializer, type RegistrySerializerOptions, registrySerializer } from './registry-serializer.ts';
import { registryClient } from './schema-registry-client.ts';
import { subjectName } from './subject-name.ts';
import { messageIndexesBytes, WIRE_HEADER_SIZE, writeWireHeader } from './wire-format.ts';

export interface ProtobufSerializerOptions extends RegistrySerializerOptions {
  /**
   * The schema the records are written with: a .proto file's text, as the subject holds it. Its
   * imports are Google's well-known types (google/protobuf/timestamp.proto, ...) or other subjects'
   * schemas named in `references` (each `{ name: <the import path>, subject, version }`).
   */
  schema: string;
  /** The message a record is (its full name, `dev.weir.Order`, or as declared, `Order`). Default: the file's first message. */
  messageName?: string;
}

/** Protobuf in the Schema Registry wire format for a Kafka sink (see RegistrySerializer). */
export type ProtobufSerializer<T> = RegistrySerializer<T>;

/**
 * `protobufSerializer<Order>({ registry, schema: readFileSync('order.proto', 'utf8'), messageName:
 * 'Order', topic })`: each record, a plain object of the message (what protobufDeserializer gives
 * back: int64 as numbers, decimal strings or bigints, enums by name or number, bytes as Buffers or
 * base64), is checked (a record that does not fit throws a RECORD_FAILED WeirError naming the field
 * path) and written as Confluent's Protobuf wire format: the header, the message indexes of the
 * message in the file, the Protobuf bytes. The subject under the 'record' strategies is the
 * message's full name.
 */
export function protobufSerializer<T>(options: ProtobufSerializerOptions): ProtobufSerializer<T> {
  const registry = registryClient(options.registry);
  const references = options.references;
  if (typeof options.schema !== 'string' || options.schema.trim() === '')
    throw new WeirError('INVALID_SINK', 'protobufSerializer schema must be the text of a .proto file', {
      hint: "pass schema: readFileSync('order.proto', 'utf8')",
    });
  const parse = (resolved: Parameters<typeof parseProto>[1]): { proto: ParsedProto; type: protobufModule.Type } => {
    let proto: ParsedProto;
    try {
      proto = parseProto(options.schema, resolved);
    } catch (error) {
      throw new WeirError('INVALID_SINK', `protobufSerializer schema does not parse: ${(error as Error).message}`, {
        hint: 'pass the .proto text; an import must be a well-known google/protobuf type or named in references ({ name, subject, version })',
      });
    }
    try {
      return { proto, type: options.messageName === undefined ? (proto.messages[0] as protobufModule.Type) : messageNamed(proto, options.messageName) };
    } catch (error) {
      throw new WeirError('INVALID_SINK', `protobufSerializer messageName: ${(error as Error).message}`, { hint: 'pass messageName as one of those' });
    }
  };
  // With references, the imported schemas come from the registry: parsed once they are fetched (prepare, else the first record).
  let parsed = references === undefined || references.length === 0 ? parse([]) : undefined;
  const fullName = (parsed?.type.fullName ?? `.${options.messageName ?? ''}`).slice(1);
  const subject = subjectName(options.subjectStrategy ?? 'topic', {
    topic: options.topic,
    isKey: options.isKey === true,
    recordName: fullName === '' ? undefined : fullName,
  });
  let indexes: Buffer | undefined;
  let type: protobufModule.Type | undefined;
  const ready = (): protobufModule.Type => {
    parsed ??= parse(registry.referencesSync({ id: -1, schemaType: 'PROTOBUF', schema: options.schema, references }));
    indexes = messageIndexesBytes(indexesOf(parsed.proto, parsed.type));
    type = parsed.type;
    return type;
  };
  const serializer = registrySerializer<T>(
    {
      registry,
      subject,
      schema: options.schema,
      schemaType: 'PROTOBUF',
      references,
      autoRegister: options.autoRegister === true,
      what: `the Protobuf message ${fullName}`,
      compatibilityHint: 'make the message {rule}-compatible (add fields with new numbers; do not change or reuse a field number or its type)',
    },
    (record, schemaId) => {
      const message = type ?? ready();
      const problem = protobufRecordProblem(message, record);
      if (problem !== undefined)
        throw new WeirError('RECORD_FAILED', `the record does not fit the Protobuf message ${fullName}: ${problem}`, {
          hint: `write records as the message's fields (subject "${subject}")`,
        });
      const body = message.encode(message.fromObject(record as Record<string, unknown>)).finish();
      const head = indexes as Buffer;
      const out = Buffer.allocUnsafe(WIRE_HEADER_SIZE + head.length + body.length);
      writeWireHeader(out, schemaId);
      head.copy(out, WIRE_HEADER_SIZE);
      out.set(body, WIRE_HEADER_SIZE + head.length);
      return out;
    },
  );
  if (references !== undefined && references.length > 0) {
    const prepare = serializer.prepare;
    serializer.prepare = async () => {
      await registry.references({ id: -1, schemaType: 'PROTOBUF', schema: options.schema, references });
      ready();
      return prepare();
    };
    serializer.beforeFirstRecord = () => serializer.prepare();
  } else {
    ready();
  }
  return serializer;
}
