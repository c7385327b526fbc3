import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointFailure } from '../../../../../src/checkpoint/checkpoint-failure-reason.ts';
import type { CheckpointLocation } from '../../../../../src/checkpoint/storage/checkpoint-location.ts';
import type { BarrierHandlerController } from '../../../../../src/runtime/io/checkpointing/checkpoint-barrier-handler.ts';
import { SingleCheckpointBarrierHandler } from '../../../../../src/runtime/io/checkpointing/single-checkpoint-barrier-handler.ts';
import { locationOf, sleep } from '../../tasks/task-test-kit.ts';

type Call =
  | { call: 'block'; channel: number }
  | { call: 'resume' }
  | { call: 'trigger'; location: CheckpointLocation; alignmentMs: number }
  | { call: 'abort'; checkpointId: number; failure: CheckpointFailure };

class RecordingController implements BarrierHandlerController {
  readonly calls: Call[] = [];

  blockChannel(channel: number): void {
    this.calls.push({ call: 'block', channel });
  }

  resumeAllChannels(): void {
    this.calls.push({ call: 'resume' });
  }

  async triggerCheckpoint(location: CheckpointLocation, alignmentMs: number): Promise<void> {
    this.calls.push({ call: 'trigger', location, alignmentMs });
  }

  abortCheckpoint(checkpointId: number, failure: CheckpointFailure): void {
    this.calls.push({ call: 'abort', checkpointId, failure });
  }

  /** The calls without their details: `block 0`, `resume`, `trigger 1`, `abort 1`. */
  get trace(): string[] {
    return this.calls.map((entry) => {
      if (entry.call === 'block') return `block ${entry.channel}`;
      if (entry.call === 'trigger') return `trigger ${entry.location.checkpointId}`;
      if (entry.call === 'abort') return `abort ${entry.checkpointId}`;
      return 'resume';
    });
  }

  triggers(): Extract<Call, { call: 'trigger' }>[] {
    return this.calls.filter((entry): entry is Extract<Call, { call: 'trigger' }> => entry.call === 'trigger');
  }
}

test('with three channels, each early channel is blocked and the last barrier triggers the checkpoint once, then every channel resumes', async () => {
  const handler = new SingleCheckpointBarrierHandler(3);
  const controller = new RecordingController();
  const location = locationOf(1);
  assert.equal(handler.state.name, 'WaitingForFirstBarrier');
  assert.equal(handler.state.checkpointId, undefined);

  await handler.processBarrier(0, location, controller);
  assert.equal(handler.state.name, 'CollectingBarriers');
  assert.equal(handler.state.checkpointId, 1);
  await handler.processBarrier(2, location, controller);
  assert.deepEqual(controller.trace, ['block 0', 'block 2']);

  await handler.processBarrier(1, location, controller);
  assert.deepEqual(controller.trace, ['block 0', 'block 2', 'trigger 1', 'resume']);
  const [trigger] = controller.triggers();
  assert.equal(trigger?.location, location);
  assert.ok(typeof trigger.alignmentMs === 'number' && trigger.alignmentMs >= 0);
  assert.equal(handler.state.name, 'WaitingForFirstBarrier');
  assert.equal(handler.state.checkpointId, undefined);
});

test('the alignment time runs from the first barrier to the last', async () => {
  const handler = new SingleCheckpointBarrierHandler(2);
  const controller = new RecordingController();
  await handler.processBarrier(0, locationOf(1), controller);
  await sleep(25);
  await handler.processBarrier(1, locationOf(1), controller);
  const alignmentMs = controller.triggers()[0]?.alignmentMs ?? -1;
  assert.ok(alignmentMs >= 15 && alignmentMs < 1000, `alignment took ${alignmentMs} ms`);
});

test('with a single channel the barrier triggers at once, without blocking', async () => {
  const handler = new SingleCheckpointBarrierHandler(1);
  const controller = new RecordingController();
  await handler.processBarrier(7, locationOf(1), controller);
  assert.equal(controller.triggers().length, 1);
  assert.ok(!controller.trace.some((entry) => entry.startsWith('block')));
  assert.equal(handler.state.name, 'WaitingForFirstBarrier');
  await handler.processBarrier(7, locationOf(2), controller);
  assert.deepEqual(
    controller.triggers().map((entry) => entry.location.checkpointId),
    [1, 2],
  );
});

test('checkpoints are aligned one after the other', async () => {
  const handler = new SingleCheckpointBarrierHandler(2);
  const controller = new RecordingController();
  for (const id of [1, 2, 3]) {
    await handler.processBarrier(1, locationOf(id), controller);
    await handler.processBarrier(0, locationOf(id), controller);
  }
  assert.deepEqual(controller.trace, ['block 1', 'trigger 1', 'resume', 'block 1', 'trigger 2', 'resume', 'block 1', 'trigger 3', 'resume']);
});

test('a barrier of a newer checkpoint while an older one aligns aborts the older one, resumes the channels and starts aligning the new one', async () => {
  const handler = new SingleCheckpointBarrierHandler(3);
  const controller = new RecordingController();
  await handler.processBarrier(0, locationOf(1), controller);
  await handler.processBarrier(1, locationOf(1), controller);
  await handler.processBarrier(2, locationOf(2), controller);
  assert.deepEqual(controller.trace, ['block 0', 'block 1', 'resume', 'abort 1', 'block 2']);
  const abort = controller.calls.find((entry) => entry.call === 'abort');
  assert.equal(abort?.call, 'abort');
  assert.equal(abort.failure.reason, 'CHECKPOINT_DECLINED_SUBSUMED');
  assert.match(abort.failure.message, /\b2\b/);
  assert.match(abort.failure.message, /\b1\b/);
  assert.equal(handler.state.name, 'CollectingBarriers');
  assert.equal(handler.state.checkpointId, 2);

  await handler.processBarrier(0, locationOf(2), controller);
  await handler.processBarrier(1, locationOf(2), controller);
  assert.deepEqual(controller.trace.slice(5), ['block 0', 'trigger 2', 'resume']);
  assert.deepEqual(
    controller.triggers().map((entry) => entry.location.checkpointId),
    [2],
    'the aborted checkpoint is never triggered',
  );
});

test('late barriers of an aborted checkpoint are ignored: no block, no trigger', async () => {
  const handler = new SingleCheckpointBarrierHandler(3);
  const controller = new RecordingController();
  await handler.processBarrier(0, locationOf(1), controller);
  await handler.processBarrier(1, locationOf(2), controller);
  const afterAbort = controller.trace.length;
  await handler.processBarrier(2, locationOf(1), controller);
  assert.equal(controller.trace.length, afterAbort, 'barrier 1 of channel 2 came after checkpoint 1 was given up');
  assert.equal(handler.state.checkpointId, 2);

  await handler.processBarrier(2, locationOf(2), controller);
  await handler.processBarrier(0, locationOf(2), controller);
  assert.deepEqual(
    controller.triggers().map((entry) => entry.location.checkpointId),
    [2],
  );
  await handler.processBarrier(1, locationOf(1), controller);
  assert.deepEqual(
    controller.triggers().map((entry) => entry.location.checkpointId),
    [2],
  );
});

test('duplicate barriers of a completed checkpoint are ignored: no block, no trigger', async () => {
  const handler = new SingleCheckpointBarrierHandler(2);
  const controller = new RecordingController();
  await handler.processBarrier(0, locationOf(1), controller);
  await handler.processBarrier(1, locationOf(1), controller);
  const afterCompletion = [...controller.trace];
  await handler.processBarrier(0, locationOf(1), controller);
  await handler.processBarrier(1, locationOf(1), controller);
  assert.deepEqual(controller.trace, afterCompletion);
  assert.equal(handler.state.name, 'WaitingForFirstBarrier');
});

test('an abort by a newer barrier is not reported again when the newer checkpoint completes', async () => {
  const handler = new SingleCheckpointBarrierHandler(2);
  const controller = new RecordingController();
  await handler.processBarrier(0, locationOf(1), controller);
  await handler.processBarrier(1, locationOf(3), controller);
  await handler.processBarrier(0, locationOf(3), controller);
  assert.deepEqual(controller.trace, ['block 0', 'resume', 'abort 1', 'block 1', 'trigger 3', 'resume']);
});
