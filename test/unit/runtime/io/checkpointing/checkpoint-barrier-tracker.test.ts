import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointLocation } from '../../../../../src/checkpoint/storage/checkpoint-location.ts';
import type { BarrierHandlerController } from '../../../../../src/runtime/io/checkpointing/checkpoint-barrier-handler.ts';
import { CheckpointBarrierTracker } from '../../../../../src/runtime/io/checkpointing/checkpoint-barrier-tracker.ts';
import { locationOf } from '../../tasks/task-test-kit.ts';

class RecordingController implements BarrierHandlerController {
  readonly trace: string[] = [];
  readonly alignments: number[] = [];

  blockChannel(channel: number): void {
    this.trace.push(`block ${channel}`);
  }

  resumeAllChannels(): void {
    this.trace.push('resume');
  }

  async triggerCheckpoint(location: CheckpointLocation, alignmentMs: number): Promise<void> {
    this.trace.push(`trigger ${location.checkpointId}`);
    this.alignments.push(alignmentMs);
  }

  abortCheckpoint(checkpointId: number): void {
    this.trace.push(`abort ${checkpointId}`);
  }
}

test('the tracker never blocks and triggers once every channel delivered the barrier', async () => {
  const tracker = new CheckpointBarrierTracker(3);
  const controller = new RecordingController();
  await tracker.processBarrier(0, locationOf(1), controller);
  await tracker.processBarrier(2, locationOf(1), controller);
  assert.deepEqual(controller.trace, []);
  assert.deepEqual(tracker.pending, [1]);
  await tracker.processBarrier(1, locationOf(1), controller);
  assert.deepEqual(controller.trace, ['trigger 1']);
  assert.deepEqual(controller.alignments, [0]);
  assert.deepEqual(tracker.pending, []);
});

test('with a single channel every barrier triggers at once', async () => {
  const tracker = new CheckpointBarrierTracker(1);
  const controller = new RecordingController();
  await tracker.processBarrier(4, locationOf(1), controller);
  await tracker.processBarrier(4, locationOf(2), controller);
  assert.deepEqual(controller.trace, ['trigger 1', 'trigger 2']);
});

test('several checkpoints count their barriers at once, each triggered when complete', async () => {
  const tracker = new CheckpointBarrierTracker(3);
  const controller = new RecordingController();
  await tracker.processBarrier(0, locationOf(1), controller);
  await tracker.processBarrier(0, locationOf(2), controller);
  await tracker.processBarrier(1, locationOf(1), controller);
  await tracker.processBarrier(1, locationOf(2), controller);
  await tracker.processBarrier(0, locationOf(3), controller);
  assert.deepEqual(tracker.pending, [1, 2, 3]);
  await tracker.processBarrier(2, locationOf(1), controller);
  assert.deepEqual(tracker.pending, [2, 3]);
  await tracker.processBarrier(2, locationOf(2), controller);
  assert.deepEqual(tracker.pending, [3]);
  assert.deepEqual(controller.trace, ['trigger 1', 'trigger 2']);
});

test('completing a newer checkpoint drops the older ones still counting, and their late barriers are ignored', async () => {
  const tracker = new CheckpointBarrierTracker(2);
  const controller = new RecordingController();
  await tracker.processBarrier(0, locationOf(1), controller);
  await tracker.processBarrier(0, locationOf(2), controller);
  await tracker.processBarrier(1, locationOf(2), controller);
  assert.deepEqual(controller.trace, ['trigger 2']);
  assert.deepEqual(tracker.pending, [], 'checkpoint 1 is dropped');
  await tracker.processBarrier(1, locationOf(1), controller);
  assert.deepEqual(controller.trace, ['trigger 2']);
  assert.deepEqual(tracker.pending, [], 'a late barrier does not start counting again');
});

test('barriers of a checkpoint already taken are ignored', async () => {
  const tracker = new CheckpointBarrierTracker(2);
  const controller = new RecordingController();
  await tracker.processBarrier(0, locationOf(1), controller);
  await tracker.processBarrier(1, locationOf(1), controller);
  await tracker.processBarrier(0, locationOf(1), controller);
  await tracker.processBarrier(1, locationOf(1), controller);
  assert.deepEqual(controller.trace, ['trigger 1']);
  assert.deepEqual(tracker.pending, []);
});

test('a channel delivering the same barrier twice counts once', async () => {
  const tracker = new CheckpointBarrierTracker(2);
  const controller = new RecordingController();
  await tracker.processBarrier(0, locationOf(1), controller);
  await tracker.processBarrier(0, locationOf(1), controller);
  assert.deepEqual(controller.trace, []);
  assert.deepEqual(tracker.pending, [1]);
});
