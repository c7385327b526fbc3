import type avscModule from 'avsc';
import { WeirError } from '../../core/errors/weir-error.ts';
import { type AvroSchema, avroType, schemaText } from './avro-schema.ts';
import { type RegistrySerializer, type RegistrySerializerOptions, registrySerializer } from './registry-serializer.ts';
import { registryClient } from './schema-registry-client.ts';
import { subjectName } from './subject-name.ts';
import { WIRE_HEADER_SIZE, writeWireHeader } from './wire-format.ts';

/** The registry serializer's options (Avro schemas here use no registry references). */
export interface AvroSerializerOptions extends Omit<RegistrySerializerOptions, 'references'> {
  /** The schema the records are written with (an object or its JSON text). */
  schema: AvroSchema;
}

/**
 * Avro in the Schema Registry wire format for a Kafka sink: `serializer: (order) => ({ key:
 * order.id, value: orderAvro(order) })`. The schema's id under its subject is looked up once
 * (at the preflight with `withSchemaRegistry`, else on the first record), then each record is
 * encoded synchronously. A record the schema does not fit throws, naming the field.
 */
export type AvroSerializer<T> = RegistrySerializer<T>;

export function avroSerializer<T>(options: AvroSerializerOptions): AvroSerializer<T> {
  const registry = registryClient(options.registry);
  let type: avscModule.Type;
  try {
    type = avroType(options.schema);
  } catch (error) {
    throw new WeirError('INVALID_SINK', `avroSerializer schema is not a valid Avro schema: ${(error as Error).message}`, {
      hint: 'pass schema as an Avro schema (an object or its JSON text)',
    });
  }
  const recordName = type.typeName === 'record' ? type.name : undefined;
  let scratch = Buffer.allocUnsafe(1024);
  return registrySerializer<T>(
    {
      registry,
      subject: subjectName(options.subjectStrategy ?? 'topic', { topic: options.topic, isKey: options.isKey === true, recordName }),
      schema: schemaText(options.schema), // as given: what the subject was registered with
      schemaType: 'AVRO',
      references: undefined,
      autoRegister: options.autoRegister === true,
      what: `the schema ${recordName ?? type.typeName}`,
      compatibilityHint: "make the schema {rule}-compatible (new fields need defaults; do not change a field's type)",
    },
    (record, schemaId) => {
      let end = type.encode(record, scratch, WIRE_HEADER_SIZE);
      if (end < 0) {
        scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, -end));
        end = type.encode(record, scratch, WIRE_HEADER_SIZE);
      }
      const out = Buffer.allocUnsafe(end);
      scratch.copy(out, WIRE_HEADER_SIZE, WIRE_HEADER_SIZE, end);
      writeWireHeader(out, schemaId);
      return out;
    },
  );
}
