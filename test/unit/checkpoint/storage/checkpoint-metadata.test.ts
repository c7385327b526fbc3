import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CHECKPOINT_METADATA_VERSION,
  type CheckpointMetadata,
  metadataVersionFor,
  parseCheckpointMetadata,
  stateFilesOf,
} from '../../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

const handle = { path: 'map-0.keyed', size: 3, sha256: 'a'.repeat(64) };

function metadata(overrides: Partial<CheckpointMetadata> = {}): CheckpointMetadata {
  return {
    version: 1,
    kind: 'checkpoint',
    jobName: 'job',
    checkpointId: 7,
    triggeredAt: 1000,
    completedAt: 1010,
    maxParallelism: 128,
    operators: [{ uid: 'map', name: 'Map', parallelism: 2, subtasks: [{ subtaskIndex: 0, keyed: handle }, { subtaskIndex: 1 }] }],
    properties: { note: 'x' },
    ...overrides,
  };
}

function corruptWith(pattern: RegExp) {
  return (error: unknown) =>
    error instanceof WeirError && error.code === 'CHECKPOINT_METADATA_CORRUPT' && pattern.test(error.message) && error.hint !== undefined;
}

test('valid metadata parses', () => {
  assert.equal(CHECKPOINT_METADATA_VERSION, 2);
  assert.deepEqual(parseCheckpointMetadata(JSON.stringify(metadata()), '/x/_metadata'), metadata());
});

test('version 2 (incremental checkpoints): keyed changes and handles in earlier checkpoints parse; a checkpoint without them is written as version 1', () => {
  const shared = metadata();
  shared.version = 2;
  shared.operators[0]!.subtasks[0] = { subtaskIndex: 0, keyed: { ...handle, checkpoint: 3 }, keyedChanges: [{ ...handle, checkpoint: 4 }, handle] };
  assert.deepEqual(parseCheckpointMetadata(JSON.stringify(shared), '/x/_metadata'), shared);
  assert.equal(metadataVersionFor(shared.operators), 2);
  assert.equal(metadataVersionFor(metadata().operators), 1);
  assert.deepEqual(
    stateFilesOf(shared)
      .slice(0, 3)
      .map((file) => file.checkpoint),
    [3, 4, undefined],
  );
});

test('schema failures name the field', () => {
  const bad = metadata();
  bad.operators[0]!.subtasks[0]!.keyed = { ...handle, sha256: 'nope' };
  assert.throws(
    () => parseCheckpointMetadata(JSON.stringify(bad), '/x/_metadata'),
    corruptWith(/^\/x\/_metadata is corrupt: operators\[0\]\.subtasks\[0\]\.keyed\.sha256: /),
  );
  assert.throws(() => parseCheckpointMetadata('[]', '/x/_metadata'), corruptWith(/expected a JSON object/));
  assert.throws(() => parseCheckpointMetadata('{"version":1', '/x/_metadata'), corruptWith(/not valid JSON/));
  assert.throws(() => parseCheckpointMetadata(JSON.stringify({ ...metadata(), version: 0 }), '/x/_metadata'), corruptWith(/version/));
  assert.throws(() => parseCheckpointMetadata(JSON.stringify({ ...metadata(), version: '1' }), '/x/_metadata'), corruptWith(/version/));
});

test('handles must stay inside the checkpoint folder', () => {
  for (const path of ['../other/x', '/etc/passwd', 'a/../../b', 'a\\b', '']) {
    const bad = metadata();
    bad.operators[0]!.subtasks[0]!.keyed = { ...handle, path };
    assert.throws(() => parseCheckpointMetadata(JSON.stringify(bad), 'm'), corruptWith(/keyed\.path/), path);
  }
});

test('inconsistent operators are corrupt', () => {
  const twice = metadata();
  twice.operators.push(structuredClone(twice.operators[0]!));
  assert.throws(() => parseCheckpointMetadata(JSON.stringify(twice), 'm'), corruptWith(/operators\[1\]\.uid: operator uid "map" appears twice/));
  const outOfRange = metadata();
  outOfRange.operators[0]!.subtasks[1]!.subtaskIndex = 2;
  assert.throws(() => parseCheckpointMetadata(JSON.stringify(outOfRange), 'm'), corruptWith(/subtask 2 is not below the parallelism 2/));
  assert.throws(() => parseCheckpointMetadata(JSON.stringify(metadata({ maxParallelism: 1 })), 'm'), corruptWith(/above maxParallelism 1/));
});

test('a newer version is refused with a hint to upgrade', () => {
  assert.throws(
    () => parseCheckpointMetadata(JSON.stringify({ version: 3, whatever: true }), '/x/_metadata'),
    (error: unknown) =>
      error instanceof WeirError &&
      error.code === 'CHECKPOINT_METADATA_TOO_NEW' &&
      error.message === '/x/_metadata has metadata version 3, newer than this Weir reads (2)' &&
      /use a newer Weir/.test(error.hint ?? ''),
  );
});
