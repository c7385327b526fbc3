import { createRequire } from 'node:module';
import type avscModule from 'avsc';

let loaded: typeof avscModule | undefined;

/** avsc, required on first use: a job without Avro (and every worker thread of one) does not load it. */
export function avsc(): typeof avscModule {
  loaded ??= createRequire(import.meta.url)('avsc') as typeof avscModule;
  return loaded;
}

/**
 * An Avro schema as a job gives it: the schema's JSON as an object (or array, for a union), its
 * JSON text, or a bare type name (`'long'`). Plain JSON, so a schema read from an .avsc file fits.
 */
export type AvroSchema = string | object;

/** An Avro schema as avsc's Type; throws (avsc's message) when it is not a valid schema. */
export function avroType(schema: AvroSchema): avscModule.Type {
  return avsc().Type.forSchema(JSON.parse(schemaText(schema)) as avscModule.Schema);
}

/** The schema as JSON text, as the registry takes it. */
export function schemaText(schema: AvroSchema): string {
  if (typeof schema !== 'string') return JSON.stringify(schema);
  return /^\s*[[{"]/.test(schema) ? schema.trim() : JSON.stringify(schema.trim());
}
