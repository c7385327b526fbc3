import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';
import { type KeyGroupRange, keyGroupRange } from './key-group-range.ts';
import { murmurHash3X86_32 } from './murmur-hash3.ts';

/**
 * Flink's `KeyGroupRangeAssignment`: which key group a key belongs to, and which subtask owns which
 * key groups. Everything here is a pure function of its arguments.
 *
 * Invariants:
 * - `keyHash(key)` depends only on the key's type and value (never on the process, platform, Node
 *   version or anything random), so a key lands in the same key group after a restart.
 * - `0 <= assignToKeyGroup(key, maxParallelism) < maxParallelism`.
 * - For `1 <= parallelism <= maxParallelism`, the ranges
 *   `computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, i)` for `i` in
 *   `[0, parallelism)` are non-empty, contiguous, ascending and partition `[0, maxParallelism)`,
 *   and `computeOperatorIndexForKeyGroup(maxParallelism, parallelism, kg) === i` exactly when `kg`
 *   lies in range `i`.
 * - maxParallelism is fixed for the life of a job: it is the number of key groups, the unit in which
 *   keyed state is redistributed when the parallelism changes.
 */

/** maxParallelism when the job does not set one (Flink derives it; Weir fixes it explicitly). */
export const DEFAULT_MAX_PARALLELISM = 128;
/** The largest maxParallelism, as in Flink (2^15). */
export const UPPER_BOUND_MAX_PARALLELISM = 32768;

const TAG_STRING = 1;
const TAG_NUMBER = 2;
const TAG_BIGINT = 3;
const TAG_BOOLEAN = 4;
/** Strings up to this length are encoded by a JavaScript loop; longer ones by the native encoder. */
const SHORT_STRING = 64;

// The canonical encoding of the key being hashed is written into this reused buffer.
let scratch = Buffer.alloc(256);

function ensureScratch(bytes: number): void {
  if (bytes > scratch.length) scratch = Buffer.alloc(Math.max(bytes, scratch.length * 2));
}

/** Writes `text` after the tag byte as UTF-8 (lone surrogates become U+FFFD); returns the encoded length. */
function encodeText(text: string, tag: number): number {
  const length = text.length;
  ensureScratch(length * 3 + 1);
  const bytes = scratch;
  bytes[0] = tag;
  if (length <= SHORT_STRING) {
    let i = 0;
    for (; i < length; i++) {
      const code = text.charCodeAt(i);
      if (code >= 0x80) break;
      bytes[i + 1] = code;
    }
    if (i === length) return length + 1;
  }
  return 1 + bytes.write(text, 1, 'utf8');
}

/**
 * The hash that decides a key's key group: MurmurHash3 x86 32-bit (seed 0) over the key's canonical
 * encoding, a one-byte type tag then the value, as an unsigned 32-bit integer:
 * - string: tag 1, then its UTF-8 bytes (lone surrogates encoded as U+FFFD);
 * - number: tag 2, then its float64 little-endian bytes (-0 encoded as 0, since they are one Map key);
 * - bigint: tag 3, then its decimal text (`-12`) in ASCII;
 * - boolean: tag 4, then one byte 0 or 1.
 * So `'1'`, `1` and `1n` are different keys with (generally) different hashes.
 */
export function keyHash(key: StateKey): number {
  let length: number;
  switch (typeof key) {
    case 'string':
      length = encodeText(key, TAG_STRING);
      break;
    case 'number':
      scratch[0] = TAG_NUMBER;
      scratch.writeDoubleLE(key === 0 ? 0 : key, 1);
      length = 9;
      break;
    case 'bigint':
      length = encodeText(key.toString(), TAG_BIGINT);
      break;
    case 'boolean':
      scratch[0] = TAG_BOOLEAN;
      scratch[1] = key ? 1 : 0;
      length = 2;
      break;
    default:
      throw new WeirError('INVALID_KEY', `cannot hash a key of type ${typeof key}`, {
        fault: 'internal',
        hint: 'keys must pass validateStateKey before they are hashed',
      });
  }
  return murmurHash3X86_32(scratch, length, 0);
}

/** The key group of `key`: `keyHash(key) % maxParallelism`. */
export function assignToKeyGroup(key: StateKey, maxParallelism: number): number {
  return keyHash(key) % maxParallelism;
}

/** The subtask (operator index) that owns `keyGroup`: `floor(keyGroup * parallelism / maxParallelism)`. */
export function computeOperatorIndexForKeyGroup(maxParallelism: number, parallelism: number, keyGroup: number): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/** The subtask that owns `key`: its key group's operator index. */
export function assignKeyToParallelOperator(key: StateKey, maxParallelism: number, parallelism: number): number {
  return computeOperatorIndexForKeyGroup(maxParallelism, parallelism, assignToKeyGroup(key, maxParallelism));
}

/**
 * The key groups subtask `operatorIndex` of `parallelism` owns, as in Flink:
 * `[ceil(i * maxP / p), ceil((i + 1) * maxP / p) - 1]`. Requires `1 <= parallelism <= maxParallelism`
 * (see {@link checkParallelism}) and `0 <= operatorIndex < parallelism`.
 */
export function computeKeyGroupRangeForOperatorIndex(maxParallelism: number, parallelism: number, operatorIndex: number): KeyGroupRange {
  if (!Number.isInteger(operatorIndex) || operatorIndex < 0 || operatorIndex >= parallelism) {
    throw new WeirError('INVALID_OPERATOR_INDEX', `operator index ${operatorIndex} is outside [0, ${parallelism})`, {
      fault: 'internal',
      hint: 'subtask indexes run from 0 to parallelism - 1',
    });
  }
  const start = Math.ceil((operatorIndex * maxParallelism) / parallelism);
  const end = Math.ceil(((operatorIndex + 1) * maxParallelism) / parallelism) - 1;
  return keyGroupRange(start, end);
}

/**
 * Checks a parallelism and maxParallelism pair; `setting` names where they came from (an operator or
 * the job) for the error.
 */
export function checkParallelism(parallelism: number, maxParallelism: number, setting: string): void {
  if (!Number.isInteger(parallelism) || parallelism < 1) {
    throw new WeirError('INVALID_PARALLELISM', `${setting}: parallelism (${parallelism}) must be a whole number of at least 1`, {
      hint: 'set parallelism to 1 or more',
    });
  }
  if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > UPPER_BOUND_MAX_PARALLELISM) {
    throw new WeirError(
      'INVALID_MAX_PARALLELISM',
      `${setting}: maxParallelism (${maxParallelism}) must be a whole number between 1 and ${UPPER_BOUND_MAX_PARALLELISM}`,
      { hint: `choose a maxParallelism between 1 and ${UPPER_BOUND_MAX_PARALLELISM} (default ${DEFAULT_MAX_PARALLELISM})` },
    );
  }
  if (maxParallelism < parallelism) {
    throw new WeirError('INVALID_MAX_PARALLELISM', `${setting}: maxParallelism (${maxParallelism}) is below parallelism (${parallelism})`, {
      hint: 'raise maxParallelism; it is fixed for the life of a job, choose it large enough for future scale-out',
    });
  }
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'number':
      return String(value);
    case 'object':
      return 'an object';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default:
      return typeof value;
  }
}

/**
 * Checks what a key selector returned and gives it back as a key (`-0` as `0`). Anything but a
 * string, a number other than NaN, a bigint or a boolean is the user's mistake, named by operator.
 */
export function validateStateKey(key: unknown, operatorName: string): StateKey {
  switch (typeof key) {
    case 'string':
    case 'bigint':
    case 'boolean':
      return key;
    case 'number':
      if (Number.isNaN(key)) break;
      return key === 0 ? 0 : key;
  }
  throw new WeirError('INVALID_KEY', `the key selector of operator "${operatorName}" returned ${describeValue(key)}, which cannot be a key`, {
    hint: 'return a string, a number (not NaN), a bigint or a boolean from the key selector, or a tuple or record of them',
  });
}
