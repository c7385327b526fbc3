import type { PreflightFinding } from '../../core/connector/preflight.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { RegisteredSchema, SchemaReference, SchemaRegistryClient } from './schema-registry-client.ts';
import type { SchemaRegistrySettings } from './schema-registry-settings.ts';
import type { SubjectNameStrategy } from './subject-name.ts';

/** What every registry serializer takes (Avro's, Protobuf's, JSON Schema's). */
export interface RegistrySerializerOptions {
  /** The registry (a `schemaRegistry(...)` client, shared so its cache is, or its settings). */
  registry: SchemaRegistryClient | SchemaRegistrySettings;
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
  /** The other subjects' schemas the schema uses (Protobuf imports, JSON Schema $refs), as the registry holds them. */
  references?: SchemaReference[];
}

/**
 * A registry serializer for a Kafka sink: callable on a record, giving the wire-format bytes. The
 * schema's id under its subject is looked up once (at the preflight with `withSchemaRegistry`, else
 * on the first record), then each record is encoded synchronously.
 */
export interface RegistrySerializer<T> {
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

/** The schema a serializer writes with, as the registry takes it. */
export interface SerializerSchema {
  registry: SchemaRegistryClient;
  subject: string;
  schema: string;
  schemaType: RegisteredSchema['schemaType'];
  references: SchemaReference[] | undefined;
  autoRegister: boolean;
  /** For messages: "the Protobuf message dev.weir.Order", "the JSON Schema Total". */
  what: string;
  /** How to make an incompatible schema compatible, for the preflight's hint. */
  compatibilityHint: string;
}

/** `encode(record, schemaId)`: the wire-format bytes. Builds the serializer around it: id lookup (and registration), preflight. */
export function registrySerializer<T>(target: SerializerSchema, encode: (record: T, schemaId: number) => Buffer): RegistrySerializer<T> {
  const { registry, subject, schema, schemaType, references } = target;
  let schemaId: number | undefined;

  const notRegistered = () =>
    new WeirError('INVALID_SINK', `${registry}: subject "${subject}" does not hold ${target.what} the sink writes (autoRegister is off)`, {
      // AVRO is the API's default schemaType: the request needs none.
      hint: `register the schema under "${subject}" first (POST ${registry.url}/subjects/${subject}/versions${schemaType === 'AVRO' ? '' : ` with schemaType ${schemaType}`}), or set autoRegister: true`,
    });

  const idSync = (): number => {
    const found = registry.lookupSync(subject, schema, schemaType, references);
    if (found !== undefined) return found.id;
    if (!target.autoRegister) throw notRegistered();
    return registry.registerSync(subject, schema, schemaType, references);
  };

  const serializer = ((record: T): Buffer => {
    schemaId ??= idSync();
    return encode(record, schemaId);
  }) as RegistrySerializer<T>;

  serializer.prepare = async () => {
    if (schemaId !== undefined) return schemaId;
    const found = await registry.lookup(subject, schema, schemaType, references);
    if (found !== undefined) schemaId = found.id;
    else if (target.autoRegister) schemaId = await registry.register(subject, schema, schemaType, references);
    else throw notRegistered();
    return schemaId;
  };
  serializer.beforeFirstRecord = () => serializer.prepare();
  serializer.preflight = async (where) => {
    const finding = (message: string, hint: string | undefined): PreflightFinding[] => [{ level: 'error', where, message: `${where}: ${message}`, hint }];
    try {
      const found = await registry.lookup(subject, schema, schemaType, references);
      if (found !== undefined) {
        schemaId = found.id; // registered: the registry accepted it under the subject's rule then
        return [];
      }
      const check = await registry.compatibility(subject, schema, schemaType, references);
      if (check !== undefined && !check.compatible) {
        const rule = await registry.compatibilityLevel(subject);
        return finding(
          `${target.what} it writes breaks subject "${subject}"'s compatibility rule ${rule} against the subject's latest version${check.messages.length > 0 ? `: ${check.messages.join('; ')}` : ''}`,
          `${target.compatibilityHint.replace('{rule}', rule)}, or change the subject's rule (PUT ${registry.url}/config/${subject})`,
        );
      }
      if (!target.autoRegister) {
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
