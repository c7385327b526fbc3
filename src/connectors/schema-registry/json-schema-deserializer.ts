import type { ValidateFunction } from 'ajv';
import { compileJsonSchema, jsonSchemaObject, validationProblem } from './json-schema.ts';
import { failedDecoder, type RegistryDeserializer, type RegistryDeserializerOptions, registryDeserializer } from './registry-deserializer.ts';
import { registryClient } from './schema-registry-client.ts';
import { WIRE_HEADER_SIZE } from './wire-format.ts';

export interface JsonSchemaDeserializerOptions extends RegistryDeserializerOptions {
  /**
   * Check each record against its id's schema (draft-07, 2019-09 or 2020-12): one that does not
   * validate is a bad record (the source's onDeserializationError policy takes it). Default false:
   * the writer validated it, and validating costs time per record.
   */
  validate?: boolean;
}

/** A Kafka source deserializer for JSON Schema records in the registry wire format (see RegistryDeserializer). */
export type JsonSchemaDeserializer<T> = RegistryDeserializer<T>;

/**
 * `kafkaSource({ deserializer: jsonSchemaDeserializer<Order>({ registry }) })`: each record is the
 * header (magic byte, schema id) then the record's JSON text, parsed. The id's schema is fetched
 * once (even without `validate`: an id the registry does not know, or of another schema type, is a
 * bad record); a record with a wrong magic byte, an unknown id or bytes that are not JSON throws,
 * so the source's onDeserializationError policy takes it.
 */
export function jsonSchemaDeserializer<T>(options: JsonSchemaDeserializerOptions): JsonSchemaDeserializer<T> {
  const registry = registryClient(options.registry);
  const validate = options.validate === true;
  return registryDeserializer<T>(registry, options.isKey === true, (schema, references) => {
    if (schema.schemaType !== 'JSON') return failedDecoder(`schema id ${schema.id} is a ${schema.schemaType} schema, not JSON Schema`);
    let check: ValidateFunction | undefined;
    if (validate) {
      try {
        check = compileJsonSchema(jsonSchemaObject(schema.schema), references);
      } catch (error) {
        return failedDecoder(`the JSON Schema of id ${schema.id} does not compile: ${(error as Error).message}`);
      }
    }
    return {
      decode(bytes, id) {
        let value: unknown;
        try {
          value = JSON.parse(bytes.toString('utf8', WIRE_HEADER_SIZE));
        } catch (error) {
          throw new Error(`the JSON Schema payload (schema id ${id}) is not JSON: ${(error as Error).message}`);
        }
        if (check !== undefined && !check(value))
          throw new Error(`the record (schema id ${id}) does not validate against its schema: ${validationProblem(check.errors)}`);
        return value as T;
      },
    };
  });
}
