import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { type TestContext, test } from 'node:test';
import type { CheckpointLocation } from '../../../../src/checkpoint/storage/checkpoint-location.ts';
import type { StateHandle, SubtaskStateMetadata } from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { valueState } from '../../../../src/core/state/state-descriptors.ts';
import type { RestoreInfo } from '../../../../src/runtime/deployment/restore-info.ts';
import { StreamTaskStateInitializer, SUBTASK_RESTORE_CHANNEL } from '../../../../src/runtime/tasks/stream-task-state-initializer.ts';
import { HeapKeyedStateBackend } from '../../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRangeContains } from '../../../../src/state/key-group-range.ts';
import { assignToKeyGroup, computeKeyGroupRangeForOperatorIndex } from '../../../../src/state/key-group-range-assignment.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { tempStorage } from './task-test-kit.ts';

const MAX_PARALLELISM = 16;
const UID = 'counter';
const count = valueState<number>('count', 0);
const KEYS = Array.from({ length: 40 }, (_, i) => `key-${i}`);
const countOf = (key: string) => Number(key.slice(4)) * 10;

/** A storage that records which state files are read. */
class RecordingStorage extends FileSystemCheckpointStorage {
  readonly reads: string[] = [];

  override readState(location: CheckpointLocation | string, handle: StateHandle): Promise<Uint8Array> {
    this.reads.push(handle.path);
    return super.readState(location, handle);
  }
}

async function recordingStorage(t: TestContext): Promise<RecordingStorage> {
  return new RecordingStorage((await tempStorage(t)).root);
}

/** Operator state of old subtask `index`: its own splits, and union offsets naming it. */
function operatorStateOf(index: number, splits: string[]): OperatorStateBackend {
  const backend = new OperatorStateBackend();
  backend.getListState<string>('splits').update(splits);
  backend.getUnionListState<string>('offsets').update([`offset of ${index}`]);
  return backend;
}

const OLD_SPLITS = [['s0', 's1', 's2'], ['s3'], ['s4', 's5']];

/**
 * Checkpoint 1 of `counter` at `parallelism`, written and completed through the storage: every old
 * subtask holds the counts of the keys of its key groups, and operator state.
 */
async function writeCheckpoint(storage: FileSystemCheckpointStorage, parallelism: number): Promise<{ restore: RestoreInfo; operatorSnapshots: Uint8Array[] }> {
  const location = storage.checkpointLocation(1);
  const subtasks: SubtaskStateMetadata[] = [];
  const operatorSnapshots: Uint8Array[] = [];
  for (let index = 0; index < parallelism; index++) {
    const range = computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, parallelism, index);
    const keyed = new HeapKeyedStateBackend({ maxParallelism: MAX_PARALLELISM, keyGroupRange: range, operatorName: UID });
    for (const key of KEYS) {
      if (!keyGroupRangeContains(range, assignToKeyGroup(key, MAX_PARALLELISM))) continue;
      keyed.setCurrentKey(key);
      keyed.getState(count).update(countOf(key));
    }
    const operatorSnapshot = operatorStateOf(index, OLD_SPLITS[index % OLD_SPLITS.length] as string[]).snapshot();
    operatorSnapshots.push(operatorSnapshot);
    subtasks.push({
      subtaskIndex: index,
      keyed: await storage.writeState(location, UID, index, 'keyed', keyed.snapshot()),
      operator: await storage.writeState(location, UID, index, 'operator', operatorSnapshot),
    });
  }
  await storage.commitMetadata(location, {
    version: 1,
    kind: 'checkpoint',
    jobName: 'test',
    checkpointId: 1,
    triggeredAt: 0,
    completedAt: 1,
    maxParallelism: MAX_PARALLELISM,
    operators: [{ uid: UID, name: 'Counter', parallelism, subtasks }],
    properties: {},
  });
  const metadata = await storage.readMetadata(location.path);
  const restore: RestoreInfo = {
    checkpointId: metadata.checkpointId,
    folder: metadata.location.path,
    maxParallelism: metadata.maxParallelism,
    operators: metadata.operators.map((operator) => ({ uid: operator.uid, parallelism: operator.parallelism, subtasks: operator.subtasks })),
    transactionsCommitted: false,
  };
  return { restore, operatorSnapshots };
}

function initializerFor(storage: FileSystemCheckpointStorage | undefined, restore: RestoreInfo | undefined, parallelism: number, subtaskIndex: number) {
  return new StreamTaskStateInitializer({ maxParallelism: MAX_PARALLELISM, parallelism, subtaskIndex, restore, storage });
}

/** The counts a backend holds, by key. */
function countsOf(backend: HeapKeyedStateBackend): Map<string, number> {
  const counts = new Map<string, number>();
  const state = backend.getState(count);
  for (const key of [...backend.keysOf('count')]) {
    backend.setCurrentKey(key);
    counts.set(key as string, state.value() as number);
  }
  return counts;
}

/** The keys subtask `index` of `parallelism` owns, with their counts. */
function expectedCounts(parallelism: number, index: number): Map<string, number> {
  const range = computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, parallelism, index);
  return new Map(KEYS.filter((key) => keyGroupRangeContains(range, assignToKeyGroup(key, MAX_PARALLELISM))).map((key) => [key, countOf(key)]));
}

test('a fresh start gets empty backends over its key groups and is not restored', async (t) => {
  const storage = await tempStorage(t);
  const initializer = initializerFor(storage, undefined, 4, 2);
  const keyed = await initializer.keyedStateBackend(UID, 'Counter');
  assert.equal(keyed.isEmpty(), true);
  assert.deepEqual(keyed.keyGroupRange, computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, 4, 2));
  assert.deepEqual((await initializer.operatorStateBackend(UID)).stateNames(), []);
  assert.equal(initializer.isRestored(UID), false);
});

test('keyed state restores at the same parallelism: each subtask gets back its own keys', async (t) => {
  const storage = await recordingStorage(t);
  const { restore } = await writeCheckpoint(storage, 3);
  for (let index = 0; index < 3; index++) {
    storage.reads.length = 0;
    const initializer = initializerFor(storage, restore, 3, index);
    assert.equal(initializer.isRestored(UID), true);
    assert.deepEqual(countsOf((await initializer.keyedStateBackend(UID, 'Counter')) as HeapKeyedStateBackend), expectedCounts(3, index));
    assert.deepEqual(storage.reads, [`${UID}-${index}.keyed`]);
  }
});

test('a restored keyed backend is published on the restore channel with what was read (a fresh start publishes nothing)', async (t) => {
  const storage = await recordingStorage(t);
  const { restore } = await writeCheckpoint(storage, 3);
  const messages: Record<string, unknown>[] = [];
  const listener = (message: unknown) => messages.push(message as Record<string, unknown>);
  subscribe(SUBTASK_RESTORE_CHANNEL, listener);
  t.after(() => unsubscribe(SUBTASK_RESTORE_CHANNEL, listener));
  await initializerFor(storage, undefined, 2, 0).keyedStateBackend(UID, 'Counter');
  assert.equal(messages.length, 0);
  await initializerFor(storage, restore, 2, 0).keyedStateBackend(UID, 'Counter');
  assert.equal(messages.length, 1);
  const message = messages[0] as Record<string, unknown>;
  const { subtasks } = restore.operators.find((operator) => operator.uid === UID) as RestoreInfo['operators'][number];
  // Parallelism 2's first subtask overlaps the old subtasks 0 and 1.
  const expectedBytes = subtasks.filter((subtask) => subtask.subtaskIndex < 2).reduce((sum, subtask) => sum + (subtask.keyed?.size ?? 0), 0);
  assert.deepEqual(
    { uid: message.uid, subtaskIndex: message.subtaskIndex, stateBackend: message.stateBackend, bytes: message.bytes, files: message.files },
    { uid: UID, subtaskIndex: 0, stateBackend: 'heap', bytes: expectedBytes, files: 2 },
  );
  assert.ok((message.readMs as number) >= 0 && (message.openMs as number) >= 0);
});

for (const parallelism of [1, 2, 5]) {
  test(`keyed state of 3 subtasks restores at parallelism ${parallelism}: each subtask gets exactly the keys of its key groups, reading only the overlapping files`, async (t) => {
    const storage = await recordingStorage(t);
    const { restore } = await writeCheckpoint(storage, 3);
    const seen = new Set<string>();
    for (let index = 0; index < parallelism; index++) {
      storage.reads.length = 0;
      const range = computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, parallelism, index);
      const counts = countsOf((await initializerFor(storage, restore, parallelism, index).keyedStateBackend(UID, 'Counter')) as HeapKeyedStateBackend);
      assert.deepEqual(counts, expectedCounts(parallelism, index));
      for (const key of counts.keys()) seen.add(key);
      const overlapping = [0, 1, 2].filter((old) => {
        const oldRange = computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, 3, old);
        return oldRange.start <= range.end && range.start <= oldRange.end;
      });
      assert.deepEqual(
        storage.reads,
        overlapping.map((old) => `${UID}-${old}.keyed`),
      );
    }
    assert.equal(seen.size, KEYS.length, 'every key is restored by some subtask');
  });
}

test('an operator the checkpoint does not hold starts empty and is not restored', async (t) => {
  const storage = await recordingStorage(t);
  const { restore } = await writeCheckpoint(storage, 2);
  storage.reads.length = 0;
  const initializer = initializerFor(storage, restore, 2, 0);
  assert.equal(initializer.isRestored('new-operator'), false);
  assert.equal((await initializer.keyedStateBackend('new-operator', 'New')).isEmpty(), true);
  assert.deepEqual((await initializer.operatorStateBackend('new-operator')).stateNames(), []);
  assert.deepEqual(storage.reads, []);
});

for (const parallelism of [3, 2, 4]) {
  test(`operator state of 3 subtasks restores at parallelism ${parallelism} as OperatorStateBackend.restoreFor does: lists redistributed, union state in full`, async (t) => {
    const storage = await recordingStorage(t);
    const { restore, operatorSnapshots } = await writeCheckpoint(storage, 3);
    const reversed: RestoreInfo = { ...restore, operators: restore.operators.map((operator) => ({ ...operator, subtasks: [...operator.subtasks].reverse() })) };
    const all: string[] = [];
    for (let index = 0; index < parallelism; index++) {
      const restored = await initializerFor(storage, reversed, parallelism, index).operatorStateBackend(UID);
      const expected = OperatorStateBackend.restoreFor(operatorSnapshots, parallelism, index);
      assert.deepEqual(restored.getListState('splits').get(), expected.getListState('splits').get());
      assert.deepEqual(restored.getUnionListState('offsets').get(), ['offset of 0', 'offset of 1', 'offset of 2']);
      all.push(...restored.getListState<string>('splits').get());
    }
    assert.deepEqual(all, OLD_SPLITS.flat(), 'every split goes to exactly one subtask');
    if (parallelism === 3) {
      const own = await Promise.all(
        [0, 1, 2].map(async (index) => (await initializerFor(storage, reversed, 3, index).operatorStateBackend(UID)).getListState('splits').get()),
      );
      assert.deepEqual(own, OLD_SPLITS, 'at the same parallelism each subtask gets back its own list');
    }
  });
}

test('at the same parallelism a subtask gets back its own list even when another old subtask wrote no operator state file', async (t) => {
  const storage = await tempStorage(t);
  const location = storage.checkpointLocation(1);
  const subtasks: SubtaskStateMetadata[] = [
    { subtaskIndex: 0, operator: await storage.writeState(location, UID, 0, 'operator', operatorStateOf(0, ['a', 'b']).snapshot()) },
    { subtaskIndex: 1 },
    { subtaskIndex: 2, operator: await storage.writeState(location, UID, 2, 'operator', operatorStateOf(2, ['c']).snapshot()) },
  ];
  const restore: RestoreInfo = {
    checkpointId: 1,
    folder: location.path,
    maxParallelism: MAX_PARALLELISM,
    operators: [{ uid: UID, parallelism: 3, subtasks }],
    transactionsCommitted: false,
  };
  const lists = await Promise.all(
    [0, 1, 2].map(async (index) => (await initializerFor(storage, restore, 3, index).operatorStateBackend(UID)).getListState('splits').get()),
  );
  assert.deepEqual(lists, [['a', 'b'], [], ['c']]);
});
