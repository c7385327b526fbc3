import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { mapState } from '../../../src/core/state/state-descriptors.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { LmdbFlushThread } from '../../../src/state/lmdb-flush-thread.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';
import { type LmdbBarrier, LmdbStore, type LmdbTransaction, TOMBSTONE } from '../../../src/state/lmdb-store.ts';

/**
 * The disk backend's write-behind (issue 34): full write buffers are written into lmdb by the
 * flush thread while the task goes on. A write is readable from the moment it is made, in flight
 * or not; a checkpoint barrier's read transaction holds exactly the state at the barrier, whether
 * the writes after it waited for it (the usual case) or could not wait (then the barrier is taken
 * first); a write the flush thread could not make fails the task by name, never silently.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-write-behind-'));
after(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;

/** Not a multiple of the write buffer: the barrier sends a layer of its own. */
const KEYS = 20_500;
const key = (i: number) => `k${String(i).padStart(6, '0')}`;

function storeWith(writeBufferEntries: number): LmdbStore {
  return new LmdbStore(join(root, `s${folders++}`), { writeBufferEntries });
}

function read(store: LmdbStore, i: number): unknown {
  return store.state.lookup(key(i), Buffer.from(key(i), 'latin1'));
}

function readAt(store: LmdbStore, transaction: LmdbTransaction, i: number): unknown {
  return store.state.db.get(Buffer.from(key(i), 'latin1'), { transaction });
}

/** The barrier's transaction, which must be taken. */
function transactionOf(barrier: LmdbBarrier): LmdbTransaction {
  const transaction = barrier.transaction;
  assert.ok(transaction !== undefined, 'the barrier is taken');
  return transaction;
}

/** Runs `body` with a flush thread of its own on a new store's environment (its database "state" is table 0 of a layer), then closes both. */
async function withFlushThread(toError: (error: Error) => Error, body: (thread: LmdbFlushThread) => Promise<void> | void): Promise<void> {
  const store = new LmdbStore(join(root, `s${folders++}`));
  const options = { path: store.dir, maxDbs: 128, noSync: true, noMetaSync: true, cache: false, keyEncoding: 'binary', encoding: 'binary' };
  const thread = new LmdbFlushThread(options, ['state'], toError);
  try {
    await body(thread);
  } finally {
    thread.idle();
    await thread.close();
    await store.close();
  }
}

/** Writes round `round` of `count` keys, each read back at once. */
function writeRound(store: LmdbStore, round: number, count: number): void {
  for (let i = 0; i < count; i++) {
    store.state.set(key(i), { i, round });
    store.written();
    if (i % 997 === 0) assert.deepEqual(read(store, i), { i, round });
  }
}

test('writes in flight stay readable; the barrier transaction holds the state at the barrier while later writes wait for it', async () => {
  const store = storeWith(1000);
  try {
    writeRound(store, 0, KEYS);
    for (let i = 0; i < KEYS; i++) assert.deepEqual(read(store, i), { i, round: 0 });
    const barrier = store.barrier();
    // Usually not taken yet: its layer is in flight (the flush thread may be quicker; then the writes after it just go).
    writeRound(store, 1, 5000); // fewer than the 8 buffers writes wait in
    await barrier.taken;
    const transaction = transactionOf(barrier);
    for (let i = 0; i < KEYS; i++) assert.deepEqual(readAt(store, transaction, i), { i, round: 0 }, `key ${i} at the barrier`);
    for (let i = 0; i < KEYS; i++) assert.deepEqual(read(store, i), { i, round: i < 5000 ? 1 : 0 }, `key ${i} now`);
    barrier.release();
    store.flush();
    for (let i = 0; i < KEYS; i += 101) assert.deepEqual(store.state.db.get(Buffer.from(key(i), 'latin1')), { i, round: i < 5000 ? 1 : 0 });
  } finally {
    await store.close();
  }
});

test('writes that cannot wait take the barrier first: its transaction still holds the state at the barrier', async () => {
  const store = storeWith(1000);
  try {
    writeRound(store, 0, KEYS);
    const barrier = store.barrier();
    // Usually not taken yet: its layer is in flight (the flush thread may be quicker; then the writes after it just go).
    writeRound(store, 1, KEYS); // past 8 buffers: the later writes go, after the barrier is taken
    const transaction = transactionOf(barrier);
    for (let i = 0; i < KEYS; i++) assert.deepEqual(readAt(store, transaction, i), { i, round: 0 }, `key ${i} at the barrier`);
    barrier.release();
    // A range read needs every write in lmdb.
    store.flush();
    let count = 0;
    for (const { value } of store.state.range(Buffer.from('k'), Buffer.from('l'))) {
      assert.equal((value as { round: number }).round, 1);
      count++;
    }
    assert.equal(count, KEYS);
  } finally {
    await store.close();
  }
});

test('a deletion in flight reads as deleted; a value that cannot be written fails at the write buffer by name', async () => {
  const store = storeWith(100);
  try {
    writeRound(store, 0, 1000);
    for (let i = 0; i < 1000; i += 2) {
      store.state.set(key(i), TOMBSTONE);
      store.written();
    }
    for (let i = 0; i < 1000; i++) assert.deepEqual(read(store, i), i % 2 === 0 ? undefined : { i, round: 0 });
    store.state.set(key(1), { f: () => 1 });
    assert.throws(
      () => store.flush(),
      (error: Error & { code?: string }) => error.code === 'STATE_NOT_SERIALIZABLE' && /cannot write/.test(error.message),
    );
    store.state.set(key(1), { i: 1 });
    store.state.set('x'.repeat(3000), 1);
    assert.throws(
      () => store.flush(),
      (error: Error & { code?: string }) => error.code === 'STATE_NOT_SERIALIZABLE' && /3000 bytes/.test(error.message),
    );
    store.state.pending.delete('x'.repeat(3000));
    store.flush();
    assert.deepEqual(store.state.db.get(Buffer.from(key(1), 'latin1')), { i: 1 });
  } finally {
    await store.close();
  }
});

test("a layer the flush thread could not write fails the next wait by the store's error, and every one after", () =>
  withFlushThread(
    (error) => Object.assign(new Error(`named: ${error.message}`), { cause: error }),
    async (thread) => {
      // One entry of table 0 with a key of length 0: lmdb refuses it.
      const layer = new Uint8Array(8);
      layer[1] = 1;
      thread.send(1, layer);
      assert.throws(() => thread.waitFor(1), /named: /);
      assert.throws(() => thread.written(), /named: /);
    },
  ));

test("a written layer's buffer comes back from the flush thread (moved) for the store's next layer", () =>
  withFlushThread(
    (error) => error,
    async (thread) => {
      // One put of table 0: key "k" (1 byte), value "v" (1 byte), in a buffer larger than the layer.
      const buffer = new ArrayBuffer(64);
      const layer = new Uint8Array(buffer, 0, 10);
      layer.set([0, 1, 0, 1, 0x6b, 0, 0, 0, 1, 0x76]);
      const back = new Promise<ArrayBuffer | undefined>((resolve) => {
        thread.onWritten = resolve;
      });
      thread.send(1, layer);
      assert.equal(buffer.byteLength, 0, 'moved to the flush thread, not copied');
      const returned = await back;
      assert.ok(returned !== undefined, 'the buffer came back');
      assert.equal(returned.byteLength, 64, 'the whole buffer, not the layer');
      assert.equal(thread.written(), 1);
    },
  ));

test('in a synchronous stretch (a restore), the answers waiting on the port are taken at once, each buffer with them', () =>
  withFlushThread(
    (error) => error,
    async (thread) => {
      const returned: (ArrayBuffer | undefined)[] = [];
      thread.onWritten = (buffer) => returned.push(buffer);
      for (let seq = 1; seq <= 3; seq++) {
        const layer = new Uint8Array(new ArrayBuffer(32), 0, 10);
        layer.set([0, 1, 0, 1, 0x6b, 0, 0, 0, 1, 0x30 + seq]);
        thread.send(seq, layer);
        thread.waitFor(seq);
      }
      // No turn of the event loop since: the answers wait on the port until taken.
      assert.equal(returned.length, 0);
      // The thread marks a layer written just before it posts the answer: taken as they arrive, never yielding.
      const pause = new Int32Array(new SharedArrayBuffer(4));
      for (let waited = 0; returned.length < 3 && waited < 2000; waited++) {
        thread.deliverReplies();
        if (returned.length < 3) Atomics.wait(pause, 0, 0, 1);
      }
      assert.deepEqual(
        returned.map((buffer) => buffer?.byteLength),
        [32, 32, 32],
      );
    },
  ));

test('clearing a map state with more entries than the write buffer deletes them all (the buffer is a new map after each send)', async () => {
  const backend = new LmdbKeyedStateBackend({
    maxParallelism: 4,
    keyGroupRange: keyGroupRange(0, 3),
    operatorName: 'clear',
    dir: join(root, `s${folders++}`),
    settings: { writeBufferEntries: 100 },
  });
  try {
    const map = backend.getState(mapState<number, number>('m'));
    backend.setCurrentKey('k');
    for (let i = 0; i < 2000; i++) map.put(i, i);
    assert.equal([...map.entries()].length, 2000);
    map.clear();
    assert.deepEqual([...map.entries()], []);
    backend.snapshot(); // every write in lmdb
    assert.deepEqual([...map.entries()], []);
    assert.equal(backend.isEmpty(), true);
  } finally {
    await backend.dispose();
  }
});
