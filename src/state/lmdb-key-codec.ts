import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';

/** The first key of every range (lmdb-js's ranges start at byte 5 unless told). */
export const FIRST_KEY = Buffer.alloc(1);

/**
 * The byte layout of the disk backend's lmdb keys (Flink's RocksDB key layout, on lmdb):
 *
 * ```
 * state entry        kg(2 BE) | state id(2 BE) | key [| map user key]
 * timer, per group   kg(2 BE) | 0xFFFE (processing) or 0xFFFF (event) | key | timestamp(8) | namespace
 * timer index        timestamp(8) | sequence(8) | kg(2 BE) | key | namespace   (one per time domain)
 * ```
 *
 * so one key group is one contiguous range of the state database (a snapshot writes it, a
 * rescale moves it, as a unit), one state of one key group is a contiguous range within it, and a
 * time domain's timers come out of its index in timestamp order. A key (and a map user key) is
 * self-delimiting: a tag byte, then a float64, or a uint32 length and the bytes; so a key's map
 * entries share the prefix `kg | state id | key` and no other key's start with it. Timestamps
 * (and a timer's registration sequence) are float64 in an order-preserving form (sign bit flipped; all bits of a negative flipped).
 */

const STRING = 0x01;
const NUMBER = 0x02;
const BIGINT = 0x03;
const FALSE = 0x04;
const TRUE = 0x05;
const NULL = 0x06;
const UNDEFINED = 0x07;

/** State ids of the per-key-group timer copies, after every state's. */
export const PROCESSING_TIMERS_ID = 0xfffe;
export const EVENT_TIMERS_ID = 0xffff;
/** The most state ids one backend hands out. */
export const MAX_STATE_ID = 0xfffd;
/** lmdb's largest key (lmdb-js builds LMDB with 1978 bytes). */
export const MAX_KEY_BYTES = 1978;

/**
 * Writes keys into one reusable buffer (no allocation per access). Reads take a view of the
 * bytes ({@link view}), the write buffer a latin1 string of them ({@link text}).
 */
export class KeyWriter {
  buffer = Buffer.allocUnsafe(4096);
  length = 0;

  reset(): this {
    this.length = 0;
    return this;
  }

  #ensure(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + bytes));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }

  uint16(value: number): this {
    this.#ensure(2);
    this.buffer.writeUInt16BE(value, this.length);
    this.length += 2;
    return this;
  }

  bytes(bytes: Uint8Array): this {
    this.#ensure(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
    return this;
  }

  timestamp(value: number): this {
    this.#ensure(8);
    writeOrderedDouble(this.buffer, this.length, value);
    this.length += 8;
    return this;
  }

  /** A key, a namespace or a map user key (primitives; `what` names it in the error for another value). */
  value(value: unknown, what: () => string): this {
    switch (typeof value) {
      case 'string': {
        const max = value.length * 3;
        this.#ensure(5 + max);
        this.buffer[this.length] = STRING;
        const written = this.buffer.write(value, this.length + 5, 'utf8');
        this.buffer.writeUInt32BE(written, this.length + 1);
        this.length += 5 + written;
        return this;
      }
      case 'number':
        this.#ensure(9);
        this.buffer[this.length] = NUMBER;
        // SameValueZero, as a Map compares keys: -0 is 0.
        this.buffer.writeDoubleBE(value === 0 ? 0 : value, this.length + 1);
        this.length += 9;
        return this;
      case 'bigint': {
        const text = value.toString();
        this.#ensure(5 + text.length);
        this.buffer[this.length] = BIGINT;
        this.buffer.writeUInt32BE(text.length, this.length + 1);
        this.buffer.write(text, this.length + 5, 'latin1');
        this.length += 5 + text.length;
        return this;
      }
      case 'boolean':
        this.#ensure(1);
        this.buffer[this.length++] = value ? TRUE : FALSE;
        return this;
      case 'undefined':
        this.#ensure(1);
        this.buffer[this.length++] = UNDEFINED;
        return this;
      default:
        if (value === null) {
          this.#ensure(1);
          this.buffer[this.length++] = NULL;
          return this;
        }
        throw new WeirError(
          'INVALID_KEY',
          `${what()} is a ${typeof value === 'object' ? 'object' : typeof value}: the disk state backend keys by primitives only`,
          {
            hint: 'use strings, numbers, bigints or booleans as keys (a map state is keyed by its user keys too); or run the job with stateBackend: heap',
          },
        );
    }
  }

  /** The bytes written, as a view (valid until the next write). */
  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /** The bytes written, as a copy. */
  copy(): Buffer {
    return Buffer.from(this.buffer.subarray(0, this.length));
  }

  /** The bytes written as a latin1 string: one char per byte, the write buffer's map key. */
  text(): string {
    return this.buffer.toString('latin1', 0, this.length);
  }
}

/** Reads what {@link KeyWriter.value} wrote at `position`; `next` is where it ends. */
export class KeyReader {
  next = 0;

  value(buffer: Uint8Array, position: number): unknown {
    const bytes = buffer as Buffer;
    const tag = bytes[position];
    switch (tag) {
      case STRING: {
        const length = bytes.readUInt32BE(position + 1);
        const start = position + 5;
        this.next = start + length;
        return (length <= SHORT_STRING && shortAscii(bytes, start, this.next)) || bytes.toString('utf8', start, this.next);
      }
      case NUMBER:
        this.next = position + 9;
        return bytes.readDoubleBE(position + 1);
      case BIGINT: {
        const length = bytes.readUInt32BE(position + 1);
        this.next = position + 5 + length;
        return BigInt(bytes.toString('latin1', position + 5, this.next));
      }
      case FALSE:
      case TRUE:
        this.next = position + 1;
        return tag === TRUE;
      case NULL:
        this.next = position + 1;
        return null;
      case UNDEFINED:
        this.next = position + 1;
        return undefined;
      default:
        throw new WeirError('STATE_SNAPSHOT_CORRUPT', `the disk state backend read a key with unknown tag ${tag}`, {
          fault: 'internal',
          hint: 'the local working folder was changed from outside; restart the job (it restores from its checkpoint)',
        });
    }
  }

  key(buffer: Uint8Array, position: number): StateKey {
    return this.value(buffer, position) as StateKey;
  }
}

/** Strings up to this long are decoded in JavaScript when ASCII (no call into the runtime: a snapshot decodes every key). */
const SHORT_STRING = 32;

/** `bytes[start, end)` as a string when every byte is ASCII, else undefined (an empty string decodes as undefined too: the caller's fallback gives ''). */
function shortAscii(bytes: Uint8Array, start: number, end: number): string | undefined {
  let text = '';
  for (let i = start; i < end; i++) {
    const code = bytes[i] as number;
    if (code >= 0x80) return undefined;
    text += String.fromCharCode(code);
  }
  return text;
}

/** Writes `value` as 8 bytes that sort as the numbers do. */
export function writeOrderedDouble(buffer: Buffer, position: number, value: number): void {
  buffer.writeDoubleBE(value === 0 ? 0 : value, position);
  if ((buffer[position] as number) & 0x80) for (let i = 0; i < 8; i++) buffer[position + i] = ~(buffer[position + i] as number) & 0xff;
  else buffer[position] = (buffer[position] as number) | 0x80;
}

export function readOrderedDouble(buffer: Uint8Array, position: number): number {
  const bytes = Buffer.from(buffer.buffer, buffer.byteOffset + position, 8);
  const copy = Buffer.allocUnsafe(8);
  if ((bytes[0] as number) & 0x80) {
    bytes.copy(copy);
    copy[0] = (copy[0] as number) & 0x7f;
  } else {
    for (let i = 0; i < 8; i++) copy[i] = ~(bytes[i] as number) & 0xff;
  }
  return copy.readDoubleBE(0);
}

/** The first key after every key that starts with `prefix` (the exclusive end of its range). */
export function prefixEnd(prefix: Uint8Array): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] !== 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.alloc(MAX_KEY_BYTES, 0xff);
}
