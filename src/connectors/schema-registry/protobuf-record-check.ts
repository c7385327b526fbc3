import type protobufModule from 'protobufjs';
import { protobuf } from './protobuf-schema.ts';

const INT32 = new Set(['int32', 'uint32', 'sint32', 'fixed32', 'sfixed32']);
const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/**
 * Why `record` does not fit `type` (naming the field path, e.g. `items[2].price: "lots" is not a
 * double`), or undefined when it does. Takes what protobufDeserializer gives back (int64 as decimal
 * strings, enums by name, bytes as Buffers) and the looser forms protobufjs' fromObject converts
 * (int64 as numbers or bigints, enums by number, bytes as base64): protobufjs itself would turn a
 * wrong value into 0 silently. Fields the message does not declare are ignored (as Avro's are).
 */
export function protobufRecordProblem(type: protobufModule.Type, record: unknown, path = ''): string | undefined {
  if (record === null || typeof record !== 'object' || Array.isArray(record))
    return `${path === '' ? 'the record' : path}: ${shown(record)} is not a ${type.name} message (an object)`;
  const fields = record as Record<string, unknown>;
  for (const field of type.fieldsArray) {
    const value = fields[field.name];
    if (value === undefined || value === null) continue;
    const at = path === '' ? field.name : `${path}.${field.name}`;
    if (field.map) {
      if (typeof value !== 'object' || Array.isArray(value)) return `${at}: ${shown(value)} is not a map (an object)`;
      for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
        const problem = valueProblem(field, entry, `${at}[${JSON.stringify(key)}]`);
        if (problem !== undefined) return problem;
      }
    } else if (field.repeated) {
      if (!Array.isArray(value)) return `${at}: ${shown(value)} is not a list (repeated ${field.type})`;
      for (let i = 0; i < value.length; i++) {
        const problem = valueProblem(field, value[i], `${at}[${i}]`);
        if (problem !== undefined) return problem;
      }
    } else {
      const problem = valueProblem(field, value, at);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

function valueProblem(field: protobufModule.Field, value: unknown, at: string): string | undefined {
  const pb = protobuf();
  const resolved = field.resolvedType;
  if (resolved instanceof pb.Type) return protobufRecordProblem(resolved, value, at);
  if (resolved instanceof pb.Enum) {
    if (typeof value === 'string' && value in resolved.values) return undefined;
    if (Number.isInteger(value)) return undefined; // proto3 enums are open: an unknown number is kept
    return `${at}: ${shown(value)} is not a value of enum ${resolved.name} (${Object.keys(resolved.values).join(', ')})`;
  }
  const type = field.type;
  const fits =
    type === 'string'
      ? typeof value === 'string'
      : type === 'bool'
        ? typeof value === 'boolean'
        : type === 'double' || type === 'float'
          ? typeof value === 'number' || value === 'NaN' || value === 'Infinity' || value === '-Infinity'
          : INT32.has(type)
            ? Number.isInteger(value) && (value as number) >= (type.startsWith('u') || type === 'fixed32' ? 0 : -2147483648) && (value as number) <= 4294967295
            : INT64.has(type)
              ? Number.isSafeInteger(value) ||
                typeof value === 'bigint' ||
                (typeof value === 'string' && /^-?\d+$/.test(value)) ||
                (typeof value === 'object' && Number.isInteger((value as { low?: unknown }).low) && Number.isInteger((value as { high?: unknown }).high))
              : type === 'bytes'
                ? value instanceof Uint8Array || typeof value === 'string'
                : true;
  return fits ? undefined : `${at}: ${shown(value)} is not ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}

const shown = (value: unknown): string => (typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value)));
