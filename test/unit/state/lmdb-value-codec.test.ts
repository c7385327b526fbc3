import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { mapState, valueState } from '../../../src/core/state/state-descriptors.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';
import { KeyReader, KeyWriter } from '../../../src/state/lmdb-key-codec.ts';
import { LmdbKeyedStateBackend } from '../../../src/state/lmdb-keyed-state-backend.ts';
import { LmdbStore } from '../../../src/state/lmdb-store.ts';

/**
 * How the disk backend encodes what it writes to lmdb (lmdb-store.ts newValueCodec): record
 * structures shared by every value of a store, in memory, so a value of a known shape is a
 * structure id and its fields; values of many shapes (more than msgpackr shares: the rest carry
 * their definition) and of structured types read back as written, from lmdb itself (a write
 * buffer of one entry: every write reaches lmdb at once), through reads, ranges and snapshots.
 */

const root = mkdtempSync(join(tmpdir(), 'weir-lmdb-codec-test-'));
after(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;

function disk(writeBufferEntries: number): LmdbKeyedStateBackend {
  return new LmdbKeyedStateBackend({
    maxParallelism: 16,
    keyGroupRange: keyGroupRange(0, 15),
    operatorName: 'codec',
    dir: join(root, `b${folders++}`),
    settings: { writeBufferEntries },
  });
}

/** Every buffered write is in lmdb after this (a snapshot at once reads lmdb at a barrier): reads then decode what lmdb holds. */
function written(backend: LmdbKeyedStateBackend): void {
  backend.snapshot();
}

/** A value of shape `i % 50` (50 shapes: more than the 32 msgpackr shares) with structured types in it. */
function sampleValue(i: number): Record<string, unknown> {
  const value: Record<string, unknown> = {
    [`field${i % 50}`]: i,
    when: new Date(1_700_000_000_000 + i),
    big: 2n ** 64n + BigInt(i),
    tags: new Map([[`t${i}`, new Set([i, i + 1])]]),
    bytes: new Uint8Array([i & 0xff, 1, 2, 3]),
    nothing: undefined,
    text: `ü-${i}`,
  };
  if (i % 7 === 0) value.self = value;
  return value;
}

function assertValue(actual: unknown, i: number): void {
  const value = actual as Record<string, unknown>;
  if (i % 7 === 0) {
    assert.equal(value.self, value, `value ${i} keeps its cycle`);
    delete value.self;
  }
  const expected = sampleValue(i);
  delete expected.self;
  assert.deepEqual(value, expected, `value ${i}`);
}

test('values of many shapes and structured types read back from lmdb as written, interleaved with writes of other shapes', async () => {
  const backend = disk(1);
  const state = backend.getState(valueState<Record<string, unknown>>('v'));
  for (let i = 0; i < 400; i++) {
    backend.setCurrentKey(`key-${i}`);
    state.update(sampleValue(i));
    written(backend);
    // Read back an earlier key (now only in lmdb) between writes of new shapes.
    const earlier = (i * 7) % (i + 1);
    backend.setCurrentKey(`key-${earlier}`);
    assertValue(state.value(), earlier);
  }
  for (let i = 0; i < 400; i++) {
    backend.setCurrentKey(`key-${i}`);
    assertValue(state.value(), i);
  }
  await backend.dispose();
});

test('a value read is a copy: its binary data does not change when lmdb reads the next value, and changing it does not change the state', async () => {
  const backend = disk(1);
  const state = backend.getState(valueState<{ bytes: Uint8Array; n: number }>('b'));
  backend.setCurrentKey('a');
  state.update({ bytes: new Uint8Array([1, 2, 3]), n: 1 });
  backend.setCurrentKey('b');
  state.update({ bytes: new Uint8Array([9, 9, 9]), n: 2 });
  written(backend);
  backend.setCurrentKey('a');
  const first = state.value();
  backend.setCurrentKey('b');
  const second = state.value();
  assert.deepEqual(first, { bytes: new Uint8Array([1, 2, 3]), n: 1 });
  assert.deepEqual(second, { bytes: new Uint8Array([9, 9, 9]), n: 2 });
  (second as { n: number }).n = 3;
  assert.equal(state.value()?.n, 2);
  await backend.dispose();
});

test('map entries of many shapes come back through a range, and a snapshot of it all restores onto the heap backend as written', async () => {
  const backend = disk(3);
  const value = backend.getState(valueState<Record<string, unknown>>('v'));
  const map = backend.getState(mapState<number, Record<string, unknown>>('m'));
  for (let i = 0; i < 200; i++) {
    backend.setCurrentKey(`key-${i % 20}`);
    value.update(sampleValue(i));
    map.put(i, sampleValue(i + 1));
  }
  backend.setCurrentKey('key-3');
  const entries = [...map.entries()].sort((a, b) => a[0] - b[0]);
  assert.deepEqual(
    entries.map(([userKey]) => userKey),
    Array.from({ length: 10 }, (_, n) => 3 + n * 20),
  );
  for (const [userKey, entry] of entries) assertValue(entry, userKey + 1);
  const heap = new HeapKeyedStateBackend({ maxParallelism: 16, keyGroupRange: keyGroupRange(0, 15), operatorName: 'codec' });
  heap.restore([backend.snapshot()]);
  for (let key = 0; key < 20; key++) {
    heap.setCurrentKey(`key-${key}`);
    assertValue(heap.getState(valueState<Record<string, unknown>>('v')).value(), 180 + key);
    const restored = [...heap.getState(mapState<number, Record<string, unknown>>('m')).entries()];
    assert.equal(restored.length, 10);
    for (const [userKey, entry] of restored) assertValue(entry, userKey + 1);
  }
  await backend.dispose();
});

test('a value of a known shape is stored as a shared structure id and its fields, not with its field names', async () => {
  const store = new LmdbStore(join(root, `s${folders++}`));
  const key = new KeyWriter();
  const keyOf = (i: number) =>
    key
      .reset()
      .uint16(1)
      .uint16(0)
      .value(`key-${i}`, () => 'a key');
  for (let i = 0; i < 3; i++) store.state.put(keyOf(i), { count: 1, sum: i, last: i });
  store.flush();
  const db = store.state.db as unknown as { getBinary(key: Uint8Array): Buffer };
  for (let i = 0; i < 3; i++) {
    const bytes = db.getBinary(keyOf(i).view());
    assert.ok(bytes.length <= 8, `{ count, sum, last } takes ${bytes.length} bytes: ${bytes.toString('hex')}`);
    assert.equal(bytes.includes(Buffer.from('count')), false);
    assert.deepEqual(store.state.get(keyOf(i)), { count: 1, sum: i, last: i });
  }
  await store.close();
});

test('keys decode as written: short ASCII, non-ASCII, empty and long strings', () => {
  const reader = new KeyReader();
  for (const text of ['', 'a', 'key-123456', 'ü', 'k€y', 'x'.repeat(31), 'y'.repeat(32), 'z'.repeat(33), `${'a'.repeat(20)}\u0080`]) {
    const bytes = new KeyWriter().value(text, () => 'a key').copy();
    assert.equal(reader.value(bytes, 0), text);
    assert.equal(reader.next, bytes.length);
  }
});
