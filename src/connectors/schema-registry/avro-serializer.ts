import type avscModule from 'avsc';
import type { PreflightFinding } from '../../core/connector/preflight.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { type AvroSchema, avroType, schemaText } from './avro-schema.ts';
import { registryClient, type SchemaRegistryClient } from './schema-registry-client.ts';
import type { SchemaRegistrySettings } from './schema-registry-settings.ts';
import { type SubjectNameStrategy, subjectName } from './subject-name.ts';
import { WIRE_HEADER_SIZE, writeWireHeader } from './wire-format.ts';

export interface AvroSerializerOptions {
  /** The registry (a `schemaRegistry(...)` client, shared so its cache is, or its settings). */
  registry: SchemaRegistryClient | SchemaRegistrySettings;
  /** The schema the records are written with (an object or its JSON text). */
  schema: AvroSchema;
  /** The topic written to: names the subject under the 'topic' and 'topic-record' strategies. */
  topic?: string;
  /** The record's key rather than its value (subject `<topic>-key`). Default false. */
  isKey?: boolean;
  /** How the subject is named: 'topic' (default), 'record' or 'topic-record'. */
  subjectStrategy?: SubjectNameStrategy;
  /**
   * Register the schema when the subject does not hold it yet (the registry checks the subject's
   * compatibility rule). Default false: the schema must be registered before the job starts (the
   * preflight refuses the job otherwise), as production registries are run.
   */
  autoRegister?: boolean;
}

/**
 * Avro in the Schema Registry wire format for a Kafka sink: `serializer: (order) => ({ key:
 * order.id, value: orderAvro(order) })`. The schema's id under its subject is looked up once
 * (at the preflight with `withSchemaRegistry`, else on the first record), then each record is
 * encoded synchronously. A record the schema does not fit throws, naming the field.
 */
export interface AvroSerializer<T> {
  (record: T): Buffer;
  /** The subject the schema is registered under. */
  readonly subject: string;
  /** The schema's id, once known. */
  readonly schemaId: number | undefined;
  /** Looks the id up (registering the schema when autoRegister is on). */
  prepare(): Promise<number>;
  /** The same, as `withSchemaRegistry` calls it when the sink's operator opens. */
  beforeFirstRecord(): Promise<number>;
  /** At start: the registry answers, the subject holds the schema (or autoRegister is on) and its compatibility rule accepts it. */
  preflight(where: string): Promise<PreflightFinding[]>;
  readonly registry: SchemaRegistryClient;
}

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
  const schema = schemaText(options.schema); // as given: what the subject was registered with
  const recordName = type.typeName === 'record' ? type.name : undefined;
  const subject = subjectName(options.subjectStrategy ?? 'topic', { topic: options.topic, isKey: options.isKey === true, recordName });
  const autoRegister = options.autoRegister === true;
  let schemaId: number | undefined;
  let scratch = Buffer.allocUnsafe(1024);

  const notRegistered = () =>
    new WeirError(
      'INVALID_SINK',
      `${registry}: subject "${subject}" does not hold the schema ${recordName ?? type.typeName} the sink writes (autoRegister is off)`,
      {
        hint: `register the schema under "${subject}" first (POST ${registry.url}/subjects/${subject}/versions), or set autoRegister: true`,
      },
    );

  const idSync = (): number => {
    const found = registry.lookupSync(subject, schema, 'AVRO');
    if (found !== undefined) return found.id;
    if (!autoRegister) throw notRegistered();
    return registry.registerSync(subject, schema, 'AVRO');
  };

  const serializer = ((record: T): Buffer => {
    schemaId ??= idSync();
    let end = type.encode(record, scratch, WIRE_HEADER_SIZE);
    if (end < 0) {
      scratch = Buffer.allocUnsafe(Math.max(scratch.length * 2, -end));
      end = type.encode(record, scratch, WIRE_HEADER_SIZE);
    }
    const out = Buffer.allocUnsafe(end);
    scratch.copy(out, WIRE_HEADER_SIZE, WIRE_HEADER_SIZE, end);
    writeWireHeader(out, schemaId);
    return out;
  }) as AvroSerializer<T>;

  serializer.prepare = async () => {
    if (schemaId !== undefined) return schemaId;
    const found = await registry.lookup(subject, schema, 'AVRO');
    if (found !== undefined) schemaId = found.id;
    else if (autoRegister) schemaId = await registry.register(subject, schema, 'AVRO');
    else throw notRegistered();
    return schemaId;
  };

  serializer.beforeFirstRecord = () => serializer.prepare();
  serializer.preflight = async (where) => {
    const finding = (message: string, hint: string | undefined): PreflightFinding[] => [{ level: 'error', where, message: `${where}: ${message}`, hint }];
    try {
      const found = await registry.lookup(subject, schema, 'AVRO');
      if (found !== undefined) {
        schemaId = found.id; // registered: the registry accepted it under the subject's rule then
        return [];
      }
      const check = await registry.compatibility(subject, schema, 'AVRO');
      if (check !== undefined && !check.compatible) {
        const rule = await registry.compatibilityLevel(subject);
        return finding(
          `the schema ${recordName ?? type.typeName} it writes breaks subject "${subject}"'s compatibility rule ${rule} against the subject's latest version${check.messages.length > 0 ? `: ${check.messages.join('; ')}` : ''}`,
          `make the schema ${rule}-compatible (new fields need defaults; do not change a field's type), or change the subject's rule (PUT ${registry.url}/config/${subject})`,
        );
      }
      if (!autoRegister) {
        const error = notRegistered();
        return finding(error.message, error.hint);
      }
      return [];
    } catch (error) {
      return finding((error as Error).message, (error as WeirError).hint);
    }
  };
  Object.defineProperties(serializer, {
    subject: { value: subject },
    schemaId: { get: () => schemaId },
    registry: { value: registry },
  });
  return serializer;
}
