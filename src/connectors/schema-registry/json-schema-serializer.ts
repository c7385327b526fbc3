import type { ValidateFunction } from 'ajv';
import { WeirError } from '../../core/errors/weir-error.ts';
import { compileJsonSchema, type JsonSchema, jsonSchemaObject, jsonSchemaText, validationProblem } from './json-schema.ts';
import { type RegistrySerializer, type RegistrySerializerOptions, registrySerializer } from './registry-serializer.ts';
import { registryClient } from './schema-registry-client.ts';
import { subjectName } from './subject-name.ts';
import { WIRE_HEADER_SIZE, writeWireHeader } from './wire-format.ts';

export interface JsonSchemaSerializerOptions extends RegistrySerializerOptions {
  /** The schema the records are written with (an object or its JSON text; draft-07, 2019-09 or 2020-12 by its $schema). */
  schema: JsonSchema;
  /** Check each record against the schema before it is written (a record that does not validate throws, naming the field path). Default true. */
  validate?: boolean;
}

/** JSON Schema records in the Schema Registry wire format for a Kafka sink (see RegistrySerializer). */
export type JsonSchemaSerializer<T> = RegistrySerializer<T>;

/**
 * `jsonSchemaSerializer<Total>({ registry, schema, topic })`: each record is validated (a
 * RECORD_FAILED WeirError names the field path of the first problem) and written as the header
 * then its JSON text. The subject under the 'record' strategies is the schema's `title`. With
 * `references` (other subjects' schemas its $refs name), the schema is compiled once they are
 * fetched (prepare, else the first record).
 */
export function jsonSchemaSerializer<T>(options: JsonSchemaSerializerOptions): JsonSchemaSerializer<T> {
  const registry = registryClient(options.registry);
  let object: object;
  try {
    object = jsonSchemaObject(options.schema);
  } catch (error) {
    throw new WeirError('INVALID_SINK', `jsonSchemaSerializer schema is not a JSON Schema: ${(error as Error).message}`, {
      hint: 'pass schema as a JSON Schema (an object or its JSON text)',
    });
  }
  const references = options.references;
  const title = typeof (object as { title?: unknown }).title === 'string' ? ((object as { title: string }).title as string) : undefined;
  const strategy = options.subjectStrategy ?? 'topic';
  if (strategy !== 'topic' && title === undefined)
    throw new WeirError('INVALID_SINK', `subjectStrategy '${strategy}' names the subject after the record, and the JSON Schema has no title`, {
      hint: "give the schema a title (its record name), or use subjectStrategy 'topic'",
    });
  const subject = subjectName(strategy, { topic: options.topic, isKey: options.isKey === true, recordName: title });
  const validating = options.validate !== false;
  const compile = (): ValidateFunction => {
    try {
      const resolved =
        references === undefined ? [] : registry.referencesSync({ id: -1, schemaType: 'JSON', schema: jsonSchemaText(options.schema), references });
      return compileJsonSchema(object, resolved);
    } catch (error) {
      if (error instanceof WeirError) throw error;
      throw new WeirError('INVALID_SINK', `jsonSchemaSerializer schema does not compile: ${(error as Error).message}`, {
        hint: 'fix the schema (ajv says what is wrong); $refs to other subjects need references ({ name, subject, version })',
      });
    }
  };
  let check = validating && (references === undefined || references.length === 0) ? compile() : undefined;
  const what = `the JSON Schema ${title ?? 'record'}`;
  const serializer = registrySerializer<T>(
    {
      registry,
      subject,
      schema: jsonSchemaText(options.schema),
      schemaType: 'JSON',
      references,
      autoRegister: options.autoRegister === true,
      what,
      compatibilityHint: 'make the schema {rule}-compatible (do not remove or retype properties readers need; keep new properties optional)',
    },
    (record, schemaId) => {
      if (validating) {
        check ??= compile();
        if (!check(record))
          throw new WeirError('RECORD_FAILED', `the record does not validate against ${what}: ${validationProblem(check.errors)}`, {
            hint: `write records the schema of subject "${subject}" accepts`,
          });
      }
      const text = JSON.stringify(record);
      if (text === undefined) throw new WeirError('RECORD_FAILED', `the record (${typeof record}) has no JSON form`, { hint: 'write a JSON value' });
      const length = Buffer.byteLength(text);
      const out = Buffer.allocUnsafe(WIRE_HEADER_SIZE + length);
      writeWireHeader(out, schemaId);
      out.write(text, WIRE_HEADER_SIZE, 'utf8');
      return out;
    },
  );
  if (references !== undefined && references.length > 0) {
    const prepare = serializer.prepare;
    serializer.prepare = async () => {
      await registry.references({ id: -1, schemaType: 'JSON', schema: jsonSchemaText(options.schema), references });
      if (validating) check ??= compile();
      return prepare();
    };
    serializer.beforeFirstRecord = () => serializer.prepare();
  }
  return serializer;
}
