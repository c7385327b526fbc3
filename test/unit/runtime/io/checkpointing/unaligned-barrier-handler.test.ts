import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CheckpointFailure } from '../../../../../src/checkpoint/checkpoint-failure-reason.ts';
import type { CheckpointLocation } from '../../../../../src/checkpoint/storage/checkpoint-location.ts';
import { parseEnvironmentConfig } from '../../../../../src/core/config/environment-config.ts';
import type { ChannelMessage } from '../../../../../src/runtime/io/channel-message.ts';
import { readChannelState } from '../../../../../src/runtime/io/checkpointing/channel-state-reader.ts';
import type { BarrierHandlerController, ChannelStateResult } from '../../../../../src/runtime/io/checkpointing/checkpoint-barrier-handler.ts';
import { type CheckpointOptions, checkpointOptionsFor } from '../../../../../src/runtime/io/checkpointing/checkpoint-options.ts';
import { SingleCheckpointBarrierHandler } from '../../../../../src/runtime/io/checkpointing/single-checkpoint-barrier-handler.ts';
import { UnalignedBarrierHandler } from '../../../../../src/runtime/io/checkpointing/unaligned-barrier-handler.ts';
import { InputGate } from '../../../../../src/runtime/io/input-gate.ts';
import { locationOf, sleep } from '../../tasks/task-test-kit.ts';

const CHANNELS = [10, 11] as const;

/**
 * A task's input as StreamTaskNetworkInput wires it, without the task: the gate, the aligned
 * handler, the unaligned one beside it, and a controller that records what they ask for. The loop
 * is the test's: `pump` runs the mails (the unaligned switch) and then polls the gate as the task
 * would, barriers going to the aligned handler, records to `processed`.
 */
class Input {
  readonly gate = new InputGate();
  readonly aligned = new SingleCheckpointBarrierHandler(CHANNELS.length);
  readonly trace: string[] = [];
  readonly processed: unknown[] = [];
  readonly channelStates: Promise<ChannelStateResult>[] = [];
  readonly declines: { checkpointId: number; failure: CheckpointFailure }[] = [];
  readonly mails: (() => Promise<void>)[] = [];
  readonly controller: BarrierHandlerController = {
    blockChannel: (channel) => {
      this.trace.push(`block ${channel}`);
      this.gate.blockConsumption(channel);
    },
    resumeAllChannels: () => {
      this.trace.push('resume');
      this.gate.resumeConsumption();
    },
    triggerCheckpoint: async (location, _alignmentMs, options, channelState) => {
      this.trace.push(`${channelState === undefined ? 'aligned' : 'unaligned'} snapshot ${location.checkpointId} after ${JSON.stringify(this.processed)}`);
      assert.ok(options !== undefined, 'the options go on with the barrier');
      if (channelState !== undefined) this.channelStates.push(channelState);
    },
    abortCheckpoint: (checkpointId, failure) => {
      this.trace.push(`decline ${checkpointId}`);
      this.declines.push({ checkpointId, failure });
    },
  };
  readonly unaligned = new UnalignedBarrierHandler({
    gate: this.gate,
    aligned: this.aligned,
    controller: this.controller,
    inputChannels: CHANNELS,
    inputIndexOf: () => 0,
    channelStateUid: 'map#channel-state',
    runInLoop: (action) => this.mails.push(action),
  });

  push(message: ChannelMessage): void {
    if (message.kind === 'barrier') {
      if (this.unaligned.barrierArrived(message)) return;
    } else if (message.kind === 'records') this.unaligned.recordsArrived(message);
    this.gate.push(message);
  }

  /** Runs the mails, then takes up to `steps` messages from the gate. */
  async pump(steps = Number.POSITIVE_INFINITY): Promise<void> {
    for (let step = 0; ; step++) {
      while (this.mails.length > 0) await (this.mails.shift() as () => Promise<void>)();
      if (step >= steps) return;
      const message = this.gate.poll();
      if (message === undefined) return;
      if (message.kind === 'records') this.processed.push(...message.records);
      else if (message.kind === 'barrier') await this.aligned.processBarrier(message.channel, message.location, this.controller, message.options);
    }
  }
}

const options = (alignedCheckpointTimeout: number, triggeredAt = Date.now()): CheckpointOptions => ({ triggeredAt, alignedCheckpointTimeout });
const records = (channel: number, ...values: unknown[]): ChannelMessage => ({ kind: 'records', channel, records: values });
const barrier = (channel: number, location: CheckpointLocation, barrierOptions?: CheckpointOptions): ChannelMessage =>
  barrierOptions === undefined ? { kind: 'barrier', channel, location } : { kind: 'barrier', channel, location, options: barrierOptions };

/** The records a channel state holds, per channel id. */
async function channelState(result: Promise<ChannelStateResult> | undefined): Promise<Record<number, unknown[]>> {
  assert.ok(result !== undefined, 'an unaligned snapshot was taken');
  const settled = await result;
  assert.equal(settled.kind, 'complete');
  if (settled.kind !== 'complete' || settled.bytes === undefined) return {};
  assert.equal(settled.uid, 'map#channel-state');
  const byChannel: Record<number, unknown[]> = {};
  for (const message of readChannelState(settled.bytes, CHANNELS, () => 0, 'test')) {
    assert.equal(message.recovered, true);
    byChannel[message.channel] = [...(byChannel[message.channel] ?? []), ...message.records];
  }
  return byChannel;
}

test('timeout 0: the first barrier to arrive overtakes the queue; what is ahead of each barrier is channel state, and is still processed', async () => {
  const input = new Input();
  input.push(records(10, 1, 2));
  input.push(records(11, 3));
  input.push(barrier(10, locationOf(1), options(0)));
  input.push(records(10, 4)); // after its channel's barrier: not channel state
  input.push(records(11, 5)); // channel 11's barrier is still to come: channel state
  await input.pump(0);
  assert.deepEqual(input.trace, ['unaligned snapshot 1 after []'], 'the snapshot comes before any queued record is processed');
  assert.equal(input.unaligned.recordingCheckpointId, 1);
  input.push(records(11, 6));
  input.push(barrier(11, locationOf(1), options(0)));
  input.push(records(11, 7));
  assert.equal(input.unaligned.recordingCheckpointId, undefined, 'the last barrier completes the channel state');
  assert.deepEqual(await channelState(input.channelStates[0]), { 10: [1, 2], 11: [3, 5, 6] });
  await input.pump();
  assert.deepEqual(input.processed, [1, 2, 3, 4, 5, 6, 7], 'every record is processed once, in order per channel');
  assert.deepEqual(input.trace, ['unaligned snapshot 1 after []'], 'the barriers never reach the aligned handler');
  assert.equal(input.gate.size, 0);
});

test('aligned first; when the alignment outlasts the timeout the checkpoint switches to unaligned: blocked channels hold nothing of it', async () => {
  const input = new Input();
  input.push(barrier(10, locationOf(1), options(60)));
  input.push(records(10, 'after-barrier'));
  input.push(records(11, 'a'));
  await input.pump(1);
  assert.deepEqual(input.trace, ['block 10'], 'aligned: channel 10 waits for channel 11');
  await input.pump(2);
  assert.deepEqual(input.processed, ['a']);
  input.push(records(11, 'b'));
  await sleep(80);
  assert.equal(input.mails.length, 1, 'the timeout asks the loop to switch');
  await input.pump(0);
  assert.deepEqual(input.trace, ['block 10', 'resume', 'unaligned snapshot 1 after ["a"]']);
  input.push(records(11, 'c'));
  input.push(barrier(11, locationOf(1), options(60)));
  assert.deepEqual(await channelState(input.channelStates[0]), { 11: ['b', 'c'] }, 'only what channel 11 had ahead of its barrier');
  await input.pump();
  assert.deepEqual(input.processed, ['a', 'after-barrier', 'b', 'c']);
});

test('a checkpoint that aligns within the timeout stays aligned: the timer does nothing', async () => {
  const input = new Input();
  input.push(barrier(10, locationOf(1), options(30)));
  input.push(records(11, 'a'));
  input.push(barrier(11, locationOf(1), options(30)));
  await input.pump();
  assert.deepEqual(input.trace, ['block 10', 'aligned snapshot 1 after ["a"]', 'resume']);
  await sleep(50);
  await input.pump();
  assert.deepEqual(input.trace, ['block 10', 'aligned snapshot 1 after ["a"]', 'resume']);
  assert.equal(input.channelStates.length, 0);
});

test('a barrier that arrives after the timeout has passed since the trigger goes unaligned at once', async () => {
  const input = new Input();
  input.push(records(10, 1));
  input.push(barrier(10, locationOf(1), options(1000, Date.now() - 5000)));
  await input.pump(0);
  assert.deepEqual(input.trace, ['unaligned snapshot 1 after []']);
  input.push(barrier(11, locationOf(1), options(1000)));
  assert.deepEqual(await channelState(input.channelStates[0]), { 10: [1] });
});

test('nothing in flight: the channel state is complete and empty (no file)', async () => {
  const input = new Input();
  input.push(barrier(10, locationOf(1), options(0)));
  input.push(barrier(11, locationOf(1), options(0)));
  await input.pump();
  const result = await input.channelStates[0];
  assert.deepEqual(result, { kind: 'complete', uid: 'map#channel-state', bytes: undefined });
});

test('barriers without options (savepoints, at-least-once, cluster mode) stay aligned', async () => {
  const input = new Input();
  input.push(records(11, 'a'));
  input.push(barrier(10, locationOf(1, 'savepoint')));
  await sleep(5);
  await input.pump();
  assert.deepEqual(input.trace, ['block 10']);
  assert.equal(input.mails.length, 0);
  const config = parseEnvironmentConfig({
    checkpointing: { interval: 1000, storage: '/tmp/x', unaligned: true, alignedCheckpointTimeout: '2s' },
  }).checkpointing;
  assert.deepEqual(checkpointOptionsFor(config, locationOf(3), 42), { triggeredAt: 42, alignedCheckpointTimeout: 2000 });
  assert.equal(checkpointOptionsFor(config, locationOf(3, 'savepoint'), 42), undefined, 'savepoints are always aligned');
  const aligned = parseEnvironmentConfig({ checkpointing: { interval: 1000, storage: '/tmp/x' } }).checkpointing;
  assert.equal(checkpointOptionsFor(aligned, locationOf(3), 42), undefined);
});

test('a barrier of a newer checkpoint on a channel still recording the older one declines the older one (subsumed)', async () => {
  const input = new Input();
  input.push(barrier(10, locationOf(1), options(0)));
  await input.pump(0);
  input.push(records(11, 'x'));
  input.push(barrier(10, locationOf(2), options(0)));
  assert.deepEqual(input.declines, [
    {
      checkpointId: 1,
      failure: { reason: 'CHECKPOINT_DECLINED_SUBSUMED', message: 'the barrier of checkpoint 2 arrived before every barrier of checkpoint 1' },
    },
  ]);
  assert.deepEqual(await input.channelStates[0], { kind: 'aborted' });
  await input.pump(0);
  input.push(barrier(11, locationOf(1), options(0)));
  input.push(barrier(11, locationOf(2), options(0)));
  assert.deepEqual(await channelState(input.channelStates[1]), { 11: ['x'] });
});

test('the coordinator aborting the checkpoint ends its recording without an acknowledgement', async () => {
  const input = new Input();
  input.push(barrier(10, locationOf(1), options(0)));
  await input.pump(0);
  input.unaligned.checkpointAborted(1);
  assert.deepEqual(await input.channelStates[0], { kind: 'aborted' });
  input.push(records(11, 'y'));
  input.push(barrier(11, locationOf(1), options(0)));
  await input.pump();
  assert.deepEqual(input.processed, ['y']);
  assert.equal(input.trace.length, 1, 'its late barrier is ignored');
});

test('unaligned checkpoints need exactly-once: at-least-once is refused naming both settings', () => {
  assert.throws(
    () => parseEnvironmentConfig({ checkpointing: { interval: 1000, storage: '/tmp/x', mode: 'at-least-once', unaligned: true } }),
    (error: Error) => /checkpointing\.unaligned: unaligned checkpoints need mode exactly-once/.test(error.message),
  );
});
