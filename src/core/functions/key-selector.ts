import type { StateKey } from '../state/state-key.ts';

/** Gives a record's key (Flink's KeySelector): the same record always gives the same key. */
export type KeySelector<T> = (record: T) => StateKey;
