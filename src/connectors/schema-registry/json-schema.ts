import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ResolvedReference } from './schema-registry-client.ts';

/** A JSON Schema as a job gives it: the schema as an object, or its JSON text. */
export type JsonSchema = string | object;

type AjvClass = new (
  options: object,
) => {
  compile(schema: object): ValidateFunction;
  addSchema(schema: object, key?: string): unknown;
};

const require = createRequire(import.meta.url);
const classes = new Map<string, AjvClass>();

/** Ajv for the schema's draft, required on first use (a job without JSON Schema does not load it). */
function ajvClass(draft: '07' | '2019-09' | '2020-12'): AjvClass {
  let found = classes.get(draft);
  if (found === undefined) {
    const module = require(draft === '07' ? 'ajv' : draft === '2019-09' ? 'ajv/dist/2019' : 'ajv/dist/2020') as { default: AjvClass };
    found = module.default;
    classes.set(draft, found);
  }
  return found;
}

/** The draft a schema's $schema names: draft-07 (also the default, with none), 2019-09 or 2020-12; throws for others. */
function draftOf(schema: object): '07' | '2019-09' | '2020-12' {
  const named = (schema as { $schema?: unknown }).$schema;
  if (named === undefined) return '07';
  const text = String(named);
  if (/draft-07/.test(text)) return '07';
  if (/2019-09/.test(text)) return '2019-09';
  if (/2020-12/.test(text)) return '2020-12';
  throw new Error(`$schema ${JSON.stringify(named)} is a JSON Schema draft Weir does not validate (draft-07, 2019-09 and 2020-12 it does)`);
}

/** The schema as an object; throws when its text is not JSON or it is not an object (or boolean schema). */
export function jsonSchemaObject(schema: JsonSchema): object {
  const value: unknown = typeof schema === 'string' ? JSON.parse(schema) : schema;
  if (typeof value === 'boolean') return value ? {} : { not: {} };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('a JSON Schema is an object (or true/false)');
  return value;
}

/** The schema as JSON text, as the registry takes it (given text is kept as given, so the registry finds what was registered). */
export function jsonSchemaText(schema: JsonSchema): string {
  return typeof schema === 'string' ? schema.trim() : JSON.stringify(schema);
}

/**
 * A validator for `schema` (its draft from $schema; unknown keywords allowed, as registries hold
 * schemas written for other validators; formats checked by ajv-formats), with the schemas it
 * references added under their reference names (what its $refs say). Throws when it does not compile.
 */
export function compileJsonSchema(schema: object, references: readonly ResolvedReference[] = []): ValidateFunction {
  const Ajv = ajvClass(draftOf(schema));
  const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
  (require('ajv-formats') as { default: (ajv: unknown) => void }).default(ajv);
  for (const reference of references) {
    if (reference.schemaType !== 'JSON') throw new Error(`the reference "${reference.name}" is a ${reference.schemaType} schema, not JSON Schema`);
    ajv.addSchema(jsonSchemaObject(reference.schema), reference.name);
  }
  return ajv.compile(schema);
}

/** The first validation error as "<field path>: <what is wrong>" (`/items/2/price: must be number`). */
export function validationProblem(errors: readonly ErrorObject[] | null | undefined): string {
  const error = errors?.[0];
  if (error === undefined) return 'it does not validate';
  const missing = error.keyword === 'required' ? `/${(error.params as { missingProperty?: string }).missingProperty}` : '';
  const path = `${error.instancePath}${missing}` || '(the record)';
  return `${path}: ${error.message ?? error.keyword}${error.keyword === 'additionalProperties' ? ` (${(error.params as { additionalProperty?: string }).additionalProperty})` : ''}`;
}
