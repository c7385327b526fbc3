import { WeirError } from '../core/errors/weir-error.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import { validateStateKey } from './key-group-range-assignment.ts';

/**
 * Composite keys (tuples or records of primitives) as the state backends and the hash exchange
 * keep them: one string, a versioned canonical encoding (`\0weir-key/1:` and JSON, a record's
 * fields sorted, bigints tagged), so equal composites are one key whatever the field order, and
 * the key group of a key is the same in every process and version. Functions get the composite
 * back (`getCurrentKey()`, a window's key). Primitive keys are kept as they are.
 */
const PREFIX = '\u0000weir-key/1:';

/** The selector a `keyBy` keys by: the user's, its composite results encoded. */
export function compositeKeySelector<T>(selector: (value: T) => KeyLike): (value: T) => StateKey {
  return (value) => {
    const key = selector(value);
    if (typeof key !== 'object' || key === null) {
      if (typeof key === 'string' && key.startsWith(PREFIX)) throw invalid(key, 'a string that starts with the marker of an encoded composite key');
      return key as StateKey;
    }
    return encodeCompositeKey(key);
  };
}

export function encodeCompositeKey(key: KeyLike): string {
  if (Array.isArray(key)) return PREFIX + JSON.stringify(key.map((part) => keyPart(part, key)));
  if (typeof key !== 'object' || key === null || (Object.getPrototypeOf(key) !== Object.prototype && Object.getPrototypeOf(key) !== null))
    throw invalid(key, 'not a tuple or a plain record');
  const record = key as Record<string, StateKey>;
  const fields = Object.keys(record).sort();
  if (fields.length === 0) throw invalid(key, 'an empty record');
  return PREFIX + JSON.stringify(Object.fromEntries(fields.map((field) => [field, keyPart(record[field], key)])));
}

/** The key a function sees: a composite as it was given, any other key as it is. */
export function decodeKey(key: StateKey): KeyLike {
  if (typeof key !== 'string' || !key.startsWith(PREFIX)) return key;
  return JSON.parse(key.slice(PREFIX.length), (_field, value: unknown) =>
    typeof value === 'object' && value !== null && '$bigint' in value ? BigInt((value as { $bigint: string }).$bigint) : value,
  ) as KeyLike;
}

/** A part of a composite: a primitive key (bigints tagged for JSON). */
function keyPart(part: unknown, whole: unknown): unknown {
  if (typeof part === 'object' && part !== null)
    throw invalid(whole, 'a part is a nested object or array (the parts of a composite key are strings, numbers, bigints or booleans)');
  const key = validateStateKey(part, 'keyBy');
  return typeof key === 'bigint' ? { $bigint: key.toString() } : key;
}

function invalid(key: unknown, what: string): WeirError {
  let shown: string;
  try {
    shown = JSON.stringify(key, (_field, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)) ?? String(key);
  } catch {
    shown = String(key);
  }
  return new WeirError('INVALID_KEY', `a key selector returned ${shown.slice(0, 200)}: ${what}`, {
    hint: 'return a string, number, bigint or boolean, or a tuple or record of them, e.g. keyBy((o) => [o.region, o.account])',
    fault: 'user',
  });
}
