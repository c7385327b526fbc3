import { WeirError } from '../core/errors/weir-error.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { TimeDomain } from '../core/time/time-domain.ts';
import type { DirtyKeys } from './dirty-keys.ts';
import { EVENT_TIMERS_ID, FIRST_KEY, KeyReader, KeyWriter, PROCESSING_TIMERS_ID, prefixEnd, readOrderedDouble, writeOrderedDouble } from './lmdb-key-codec.ts';
import type { LmdbKeyContext } from './lmdb-state-table.ts';
import type { LmdbStore, LmdbTable } from './lmdb-store.ts';

/** Timers read from the index per range scan while firing. */
const POLL_BATCH = 256;
const PRESENT = Buffer.of(1);

/** A timer the backend fires: its key (and key bytes, key group), timestamp and namespace. */
export interface LmdbTimer {
  key: StateKey;
  keyBytes: Buffer;
  keyGroup: number;
  timestamp: number;
  namespace: string;
}

/**
 * The timers of one time domain of a disk backend (Flink's RocksDB timer service): each timer is
 * an entry of the domain's index, ordered by (timestamp, registration sequence), so the next timers
 * are a range scan from the start and timers of one timestamp fire in registration order, as the
 * heap's; and an entry of its key group's range of the state database (`kg | domain id | key |
 * timestamp | namespace`, its value the sequence), so a snapshot writes a key group's timers with
 * its state and a restore brings them back as a unit. The earliest timestamp is cached (a scan
 * only when the head was fired or deleted).
 */
export class LmdbTimerService {
  readonly domain: TimeDomain;
  readonly id: number;
  readonly #store: LmdbStore;
  readonly #index: LmdbTable;
  readonly #context: LmdbKeyContext;
  readonly #groupKey = new KeyWriter();
  readonly #indexKey = new KeyWriter();
  readonly #reader = new KeyReader();
  readonly #description: string;
  /** The earliest timestamp, when known (undefined: no timer). */
  #head: number | undefined = undefined;
  #headKnown = true;
  /** While firing: the earliest timestamp registered by the timers fired (a batch read before it must stop there). */
  #lowWater = Number.POSITIVE_INFINITY;
  size = 0;
  /** Registration order (the heap's TimerHeapInternalTimer.sequence). */
  #nextSequence = 0;
  /** With incremental checkpoints: the keys whose timers changed since the last barrier (IncrementalTracker swaps it at each barrier). */
  dirty: DirtyKeys | undefined;

  constructor(domain: TimeDomain, context: LmdbKeyContext, store: LmdbStore) {
    this.domain = domain;
    this.id = domain === 'processing' ? PROCESSING_TIMERS_ID : EVENT_TIMERS_ID;
    this.#store = store;
    this.#index = domain === 'processing' ? store.processingTimers : store.eventTimers;
    this.#context = context;
    this.#description = `a ${domain}-time timer`;
  }

  register(timestamp: number, namespace: string): boolean {
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) {
      throw new WeirError('INVALID_TIMER', `${this.#description} of operator "${this.#context.operatorName}" was registered for ${timestamp}`, {
        hint: 'register timers for a finite timestamp in milliseconds',
      });
    }
    const context = this.#context;
    context.requireKeyGroupIndex(this.#description);
    const added = this.add(context.keyBytes, context.keyGroup, timestamp, namespace);
    if (added) this.dirty?.mark(context.keyGroupIndex, context.currentKey as StateKey);
    return added;
  }

  #groupKeyOf(keyBytes: Buffer, keyGroup: number, timestamp: number, namespace: string): KeyWriter {
    return this.#groupKey
      .reset()
      .uint16(keyGroup)
      .uint16(this.id)
      .bytes(keyBytes)
      .timestamp(timestamp)
      .value(namespace, () => `the namespace of ${this.#description}`);
  }

  #indexKeyOf(keyBytes: Buffer, keyGroup: number, timestamp: number, namespace: string, sequence: number): KeyWriter {
    return this.#indexKey
      .reset()
      .timestamp(timestamp)
      .timestamp(sequence)
      .uint16(keyGroup)
      .bytes(keyBytes)
      .value(namespace, () => 'a namespace');
  }

  /** Adds a timer of the key `keyBytes` encodes; false when it was there. */
  add(keyBytes: Buffer, keyGroup: number, timestamp: number, namespace: string): boolean {
    const state = this.#store.state;
    const groupKey = this.#groupKeyOf(keyBytes, keyGroup, timestamp, namespace);
    if (state.get(groupKey) !== undefined) return false;
    const sequence = this.#nextSequence++;
    state.put(groupKey, sequence);
    this.#index.put(this.#indexKeyOf(keyBytes, keyGroup, timestamp, namespace, sequence), PRESENT);
    this.size++;
    if (this.#headKnown && (this.#head === undefined || timestamp < this.#head)) this.#head = timestamp;
    if (timestamp < this.#lowWater) this.#lowWater = timestamp;
    return true;
  }

  delete(timestamp: number, namespace: string): boolean {
    const context = this.#context;
    context.requireKeyGroupIndex(this.#description);
    const state = this.#store.state;
    const groupKey = this.#groupKeyOf(context.keyBytes, context.keyGroup, timestamp, namespace);
    const sequence = state.get(groupKey) as number | undefined;
    if (sequence === undefined) return false;
    this.#remove(context.keyBytes, context.keyGroup, timestamp, namespace, sequence);
    this.dirty?.mark(context.keyGroupIndex, context.currentKey as StateKey);
    if (this.#head === timestamp) this.#headKnown = false;
    return true;
  }

  /** Removes a timer whose group entry {@link #groupKey} holds. */
  #remove(keyBytes: Buffer, keyGroup: number, timestamp: number, namespace: string, sequence: number): void {
    this.#store.state.remove(this.#groupKey);
    this.#index.remove(this.#indexKeyOf(keyBytes, keyGroup, timestamp, namespace, sequence));
    this.size--;
  }

  /** The next registration sequence (a base keeps it: timers restored later number on from it). */
  get sequence(): number {
    return this.#nextSequence;
  }

  /**
   * After lmdb's file was opened as a base: timers number on from `sequence`, the count is the
   * index's, and the earliest timestamp is read again when asked.
   */
  reopened(sequence: number): void {
    this.#nextSequence = Math.max(this.#nextSequence, sequence);
    this.size = this.#store.entryCount(this.#index);
    this.#headKnown = false;
  }

  /** Removes every timer of the key `keyBytes` encodes in key group `keyGroup` (a restored change replaces a key's timers). */
  removeKey(keyBytes: Buffer, keyGroup: number): void {
    this.#store.flush();
    const prefix = this.#groupKey.reset().uint16(keyGroup).uint16(this.id).bytes(keyBytes).copy();
    const found: { timestamp: number; namespace: string; sequence: number }[] = [];
    for (const { key, value } of this.#store.state.range(prefix, prefixEnd(prefix))) {
      found.push({
        timestamp: readOrderedDouble(key, prefix.length),
        namespace: this.#reader.value(key, prefix.length + 8) as string,
        sequence: value as number,
      });
    }
    for (const { timestamp, namespace, sequence } of found) {
      this.#groupKeyOf(keyBytes, keyGroup, timestamp, namespace);
      this.#remove(keyBytes, keyGroup, timestamp, namespace, sequence);
    }
    if (found.length > 0) this.#headKnown = false;
  }

  nextTimestamp(): number | undefined {
    if (this.#headKnown) return this.#head;
    this.#store.flush();
    this.#head = undefined;
    for (const { key } of this.#index.range(FIRST_KEY, MAX_INDEX_KEY, 1)) this.#head = readOrderedDouble(key, 0);
    this.#headKnown = true;
    return this.#head;
  }

  /**
   * Fires every timer at or before `time`, earliest first: reads a batch from the index, and
   * before firing each checks it is still there (an earlier one's function may have deleted it)
   * and that no timer registered meanwhile comes first (else reads again).
   */
  pollUpTo(time: number, fire: (timer: LmdbTimer) => void): number {
    let fired = 0;
    const end = Buffer.allocUnsafe(8);
    writeOrderedDouble(end, 0, time);
    const endKey = prefixEnd(end);
    const state = this.#store.state;
    for (;;) {
      const head = this.nextTimestamp();
      if (head === undefined || head > time) return fired;
      this.#store.flush();
      const batch: LmdbTimer[] = [];
      const reader = this.#reader;
      for (const { key } of this.#index.range(FIRST_KEY, endKey, POLL_BATCH)) {
        const timestamp = readOrderedDouble(key, 0);
        const keyGroup = key.readUInt16BE(16);
        const stateKey = reader.key(key, 18);
        const keyBytes = Buffer.from(key.subarray(18, reader.next));
        const namespace = reader.value(key, reader.next) as string;
        batch.push({ key: stateKey, keyBytes, keyGroup, timestamp, namespace });
      }
      this.#lowWater = Number.POSITIVE_INFINITY;
      for (const timer of batch) {
        if (this.#lowWater <= timer.timestamp) break;
        const sequence = state.get(this.#groupKeyOf(timer.keyBytes, timer.keyGroup, timer.timestamp, timer.namespace)) as number | undefined;
        if (sequence === undefined) continue;
        this.#remove(timer.keyBytes, timer.keyGroup, timer.timestamp, timer.namespace, sequence);
        this.dirty?.mark(timer.keyGroup - this.#context.keyGroupStart, timer.key);
        fired++;
        fire(timer);
      }
      this.#lowWater = Number.POSITIVE_INFINITY;
      this.#headKnown = false;
    }
  }
}

/** Past the last index key (timestamps are 8 bytes, the first of a finite double's at most 0xFF). */
const MAX_INDEX_KEY = Buffer.alloc(9, 0xff);

/** Reads a per-key-group timer entry (`kg | id | key | timestamp | namespace`) into `flat`. */
export function readGroupTimer(key: Buffer, reader: KeyReader, flat: unknown[]): void {
  const stateKey = reader.key(key, 4);
  const timestamp = readOrderedDouble(key, reader.next);
  const namespace = reader.value(key, reader.next + 8);
  flat.push(stateKey, timestamp, namespace);
}
