/** What the state backends key by: keys are compared as JavaScript Map keys (SameValueZero). */
export type StateKey = string | number | bigint | boolean;

/** A key made of parts: a tuple, or a record, of primitive keys. */
export type CompositeKey = readonly StateKey[] | { readonly [field: string]: StateKey };

/**
 * What a key selector may return (`keyBy`): a primitive key, or a composite one, which the job
 * keys by in a canonical encoding (composite-key.ts) and hands back as it was (`getCurrentKey()`,
 * a window's key).
 */
export type KeyLike = StateKey | CompositeKey;
