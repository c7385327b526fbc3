/** What a key selector may return: keys are compared as JavaScript Map keys (SameValueZero). */
export type StateKey = string | number | bigint | boolean;
