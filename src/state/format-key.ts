import type { StateKey } from '../core/state/state-key.ts';

/** A key as errors show it: strings quoted (and cut after 60 characters), bigints with their n. */
export function formatKey(key: StateKey): string {
  if (typeof key === 'string') return JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}...` : key);
  if (typeof key === 'bigint') return `${key}n`;
  return String(key);
}
