import type { StateTtl } from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { StateKind } from '../core/state/state-types.ts';
import type { DirtyKeys } from './dirty-keys.ts';
import { InternalKeyContext } from './internal-key-context.ts';
import { KeyReader, KeyWriter, prefixEnd } from './lmdb-key-codec.ts';
import { type LmdbStore, TOMBSTONE } from './lmdb-store.ts';
import { isExpired, liveValue, type TtlValue } from './state-table.ts';

/** The current key of a disk backend: the heap's context plus the key's absolute key group and its encoded bytes (made once per key change). */
export class LmdbKeyContext extends InternalKeyContext {
  keyGroup = -1;
  keyBytes: Buffer = Buffer.alloc(0);
}

/** Empty group hops one incremental cleanup step may make (a sparse state must not cost every key group per access). */
const MAX_EMPTY_HOPS = 4;

/**
 * One keyed state of a disk backend (the counterpart of the heap's StateTable): its id in the key
 * layout (lmdb-key-codec.ts) and what its state objects do to the current key's entry. Value,
 * list, reducing and aggregating state keep one entry per key (a list as one array); map state one
 * entry per user key, so a map is read and written entry by entry, and iterated as a range.
 */
export class LmdbStateTable {
  readonly name: string;
  readonly kind: StateKind;
  readonly id: number;
  readonly context: LmdbKeyContext;
  readonly store: LmdbStore;
  readonly clock: () => number;
  readonly description: string;
  /** Whether the values are TTL-wrapped ({ v, t }; a map's per entry, a list's per element). */
  ttlWrapped = false;
  ttl: StateTtl | undefined;
  /** With incremental checkpoints: the keys written since the last barrier (IncrementalTracker swaps it at each barrier). */
  dirty: DirtyKeys | undefined;
  readonly #key = new KeyWriter();
  readonly #reader = new KeyReader();
  readonly #keyGroupStart: number;
  readonly #keyGroupCount: number;
  /** Incremental cleanup: the key group index it is in, and the last key it checked there. */
  #cleanupGroup = 0;
  #cleanupAfter: Buffer | undefined;
  /** What {@link #entryKey} made last: for which key bytes and key group, its length, bytes and (once asked) latin1 string. */
  #entryFor: Buffer | undefined;
  #entryGroup = -1;
  #entryLength = 0;
  #entryBytes: Buffer = Buffer.alloc(0);
  #entryText: string | undefined;

  constructor(name: string, kind: StateKind, id: number, context: LmdbKeyContext, store: LmdbStore, keyGroupCount: number, clock: () => number) {
    this.name = name;
    this.kind = kind;
    this.id = id;
    this.context = context;
    this.store = store;
    this.clock = clock;
    this.description = `${kind} state "${name}"`;
    this.#keyGroupStart = context.keyGroupStart;
    this.#keyGroupCount = keyGroupCount;
  }

  /** The key of the current key's entry (and of `userKey`'s, for a map), made once per current key. */
  #entryKey(): KeyWriter {
    const context = this.context;
    context.requireKeyGroupIndex(this.description);
    const key = this.#key;
    if (context.keyBytes === this.#entryFor && context.keyGroup === this.#entryGroup) {
      key.length = this.#entryLength;
      return key;
    }
    key.reset().uint16(context.keyGroup).uint16(this.id).bytes(context.keyBytes);
    this.#entryFor = context.keyBytes;
    this.#entryGroup = context.keyGroup;
    this.#entryLength = key.length;
    this.#entryBytes = key.view();
    this.#entryText = undefined;
    return key;
  }

  /** The current key's entry key as the write buffer keys it (a latin1 string), made once per current key. */
  #entryKeyText(): string {
    this.#entryKey();
    this.#entryText ??= this.#key.text();
    return this.#entryText;
  }

  #userKey(userKey: unknown): KeyWriter {
    return this.#entryKey().value(userKey, () => `a user key of ${this.description} of operator "${this.context.operatorName}"`);
  }

  get(): unknown {
    const text = this.#entryKeyText();
    return this.store.state.lookup(text, this.#entryBytes);
  }

  put(value: unknown): void {
    this.store.state.set(this.#entryKeyText(), value);
    this.#markCurrent();
  }

  remove(): void {
    if (this.kind === 'map') this.removeAll();
    else {
      this.store.state.set(this.#entryKeyText(), TOMBSTONE);
      this.#markCurrent();
    }
  }

  /**
   * The current key changed (incremental checkpoints). Only writes mark: a value read is a copy
   * (lmdb-keyed-states.ts), so changing it in place changes no state until it is written back.
   */
  #markCurrent(): void {
    const context = this.context;
    this.dirty?.mark(context.keyGroupIndex, context.currentKey as StateKey);
  }

  /** The key of the entry `key` (`kg | id | key ...`) changed: a cleanup's write. */
  #markEntry(key: Buffer): void {
    const dirty = this.dirty;
    if (dirty !== undefined) dirty.mark(key.readUInt16BE(0) - this.#keyGroupStart, this.#reader.key(key, 4));
  }

  getEntry(userKey: unknown): unknown {
    return this.store.state.get(this.#userKey(userKey));
  }

  putEntry(userKey: unknown, value: unknown): void {
    this.store.state.put(this.#userKey(userKey), value);
    this.#markCurrent();
  }

  removeEntry(userKey: unknown): void {
    this.store.state.remove(this.#userKey(userKey));
    this.#markCurrent();
  }

  /** The current key's map entries, in user-key byte order (buffered writes go to lmdb first). */
  entries(): [unknown, unknown][] {
    const store = this.store;
    store.flush();
    const prefix = this.#entryKey().copy();
    const out: [unknown, unknown][] = [];
    for (const { key, value } of store.state.range(prefix, prefixEnd(prefix))) out.push([this.#reader.value(key, prefix.length), value]);
    return out;
  }

  /** Whether the current key's map has an entry. */
  hasEntries(): boolean {
    const store = this.store;
    store.flush();
    const prefix = this.#entryKey().copy();
    for (const _ of store.state.range(prefix, prefixEnd(prefix), 1)) return true;
    return false;
  }

  /** Deletes every entry of the current key's map. */
  removeAll(): void {
    const store = this.store;
    store.flush();
    const prefix = this.#entryKey().copy();
    // The keys first, then the deletions: a cursor renewed while the flush thread deletes in its range
    // skipped entries. Each through set (the write buffer is a new map after each send: never hold it).
    const keys: string[] = [];
    for (const { key } of store.state.range(prefix, prefixEnd(prefix))) keys.push(key.toString('latin1'));
    for (const key of keys) store.state.set(key, TOMBSTONE);
    this.#markCurrent();
  }

  /**
   * Incremental TTL cleanup (the heap's cleanupIncrementally, on lmdb): checks the next
   * `incrementalSize` entries of the state as lmdb holds them, key group by key group, and drops
   * what expired (writes still in the write buffer are checked once written).
   */
  cleanupStep(): void {
    const ttl = this.ttl;
    if (ttl === undefined || ttl.incrementalSize === 0) return;
    const now = this.clock();
    const state = this.store.state;
    let visited = 0;
    let hops = 0;
    while (visited < ttl.incrementalSize && hops < MAX_EMPTY_HOPS) {
      const prefix = Buffer.allocUnsafe(4);
      prefix.writeUInt16BE(this.#keyGroupStart + this.#cleanupGroup, 0);
      prefix.writeUInt16BE(this.id, 2);
      const start = this.#cleanupAfter ?? prefix;
      const want = ttl.incrementalSize - visited;
      let seen = 0;
      for (const { key, value } of state.db.getRange({
        start,
        end: prefixEnd(prefix),
        limit: want,
        exclusiveStart: this.#cleanupAfter !== undefined,
        snapshot: false,
      })) {
        seen++;
        this.#cleanupAfter = Buffer.from(key);
        const text = key.toString('latin1');
        const buffered = state.buffered(text);
        if (buffered === TOMBSTONE) continue;
        const current = buffered === undefined ? value : buffered;
        const live = this.kind === 'map' ? (isExpired(current as TtlValue<unknown>, ttl, now) ? undefined : current) : liveValue(this.kind, current, ttl, now);
        if (live === current) continue;
        state.pending.set(text, live === undefined ? TOMBSTONE : live);
        this.store.written();
        this.#markEntry(key);
      }
      visited += seen;
      if (seen < want) {
        hops++;
        this.#cleanupAfter = undefined;
        this.#cleanupGroup = (this.#cleanupGroup + 1) % this.#keyGroupCount;
      }
    }
  }

  /** Drops every expired value (a restore's values, with the TTL the operator now asks for). */
  purgeExpired(): void {
    const ttl = this.ttl;
    if (ttl === undefined) return;
    const store = this.store;
    store.flush();
    const now = this.clock();
    const state = store.state;
    for (let index = 0; index < this.#keyGroupCount; index++) {
      const prefix = Buffer.allocUnsafe(4);
      prefix.writeUInt16BE(this.#keyGroupStart + index, 0);
      prefix.writeUInt16BE(this.id, 2);
      // The entries first, then the writes (a cursor renewed while the flush thread writes in its range skips entries).
      for (const { key, value } of [...state.range(prefix, prefixEnd(prefix))].map(({ key, value }) => ({ key: Buffer.from(key), value }))) {
        const live = this.kind === 'map' ? (isExpired(value as TtlValue<unknown>, ttl, now) ? undefined : value) : liveValue(this.kind, value, ttl, now);
        if (live === value) continue;
        state.set(key.toString('latin1'), live === undefined ? TOMBSTONE : live);
        this.#markEntry(key);
      }
    }
    store.flush();
  }

  /** The keys with a value, key group by key group (buffered writes go to lmdb first). */
  keys(): StateKey[] {
    const store = this.store;
    store.flush();
    const keys: StateKey[] = [];
    let last: Buffer | undefined;
    for (let index = 0; index < this.#keyGroupCount; index++) {
      const prefix = Buffer.allocUnsafe(4);
      prefix.writeUInt16BE(this.#keyGroupStart + index, 0);
      prefix.writeUInt16BE(this.id, 2);
      for (const { key } of store.state.range(prefix, prefixEnd(prefix))) {
        const reader = this.#reader;
        const stateKey = reader.key(key, 4);
        // A map's entries of one key are adjacent: one key each.
        const keyEnd = reader.next;
        if (last !== undefined && last.length === keyEnd && key.compare(last, 0, keyEnd, 0, keyEnd) === 0) continue;
        last = Buffer.from(key.subarray(0, keyEnd));
        keys.push(stateKey);
      }
    }
    return keys;
  }
}
