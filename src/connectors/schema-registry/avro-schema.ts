import avsc from 'avsc';

/**
 * An Avro schema as a job gives it: the schema's JSON as an object (or array, for a union), its
 * JSON text, or a bare type name (`'long'`). Plain JSON, so a schema read from an .avsc file fits.
 */
export type AvroSchema = string | object;

/** An Avro schema as avsc's Type; throws (avsc's message) when it is not a valid schema. */
export function avroType(schema: AvroSchema): avsc.Type {
  return avsc.Type.forSchema(JSON.parse(schemaText(schema)) as avsc.Schema);
}

/** The schema as JSON text, as the registry takes it. */
export function schemaText(schema: AvroSchema): string {
  if (typeof schema !== 'string') return JSON.stringify(schema);
  return /^\s*[[{"]/.test(schema) ? schema.trim() : JSON.stringify(schema.trim());
}
