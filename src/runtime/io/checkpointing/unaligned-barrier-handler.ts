import type { CheckpointFailureReason } from '../../../checkpoint/checkpoint-failure-reason.ts';
import type { CheckpointLocation } from '../../../checkpoint/storage/checkpoint-location.ts';
import type { ChannelMessage } from '../channel-message.ts';
import type { InputGate } from '../input-gate.ts';
import { ChannelStateWriter } from './channel-state-writer.ts';
import type { BarrierHandlerController, ChannelStateResult } from './checkpoint-barrier-handler.ts';
import type { CheckpointOptions } from './checkpoint-options.ts';
import type { SingleCheckpointBarrierHandler } from './single-checkpoint-barrier-handler.ts';

type BarrierMessage = Extract<ChannelMessage, { kind: 'barrier' }>;
type RecordsMessage = Extract<ChannelMessage, { kind: 'records' }>;

export interface UnalignedBarrierHandlerOptions {
  gate: InputGate;
  /** The task's aligned handler, which takes the barriers in order until a checkpoint goes unaligned. */
  aligned: SingleCheckpointBarrierHandler;
  controller: BarrierHandlerController;
  /** The task's input channel ids, in the plan's order (a channel's index in it is its index in the channel state). */
  inputChannels: readonly number[];
  /** Which input of the head operator a channel feeds. */
  inputIndexOf: (channel: number) => number;
  /** The uid the task's channel state is stored under. */
  channelStateUid: string;
  /** Runs `action` on the task's loop before any more input (a mail). */
  runInLoop: (action: () => Promise<void>) => void;
}

/** A checkpoint whose barriers arrived here while it may still go unaligned. */
interface Arrival {
  location: CheckpointLocation;
  options: CheckpointOptions;
  arrivedAt: number;
  timer: NodeJS.Timeout | undefined;
  scheduled: boolean;
}

/** An unaligned checkpoint taken here that still records the records in flight on some channels. */
interface Recording {
  checkpointId: number;
  writer: ChannelStateWriter;
  /** Channels whose barrier has not arrived yet: what arrives on them before it is channel state. */
  channels: Set<number>;
  resolve: (result: ChannelStateResult) => void;
}

/**
 * Unaligned checkpoints at a task with input channels (Flink's FLIP-76: the unaligned and
 * "alternating" states of SingleCheckpointBarrierHandler), beside the aligned handler. A barrier
 * that may go unaligned (it carries {@link CheckpointOptions}) is watched from its arrival: once
 * `alignedCheckpointTimeout` has passed since its checkpoint was triggered (at once for 0) and the
 * task has not processed every barrier of it in order, the checkpoint switches to unaligned, on
 * the task's loop before any more input: the records queued ahead of each channel's barrier (all
 * queued records of a channel whose barrier has not arrived) are taken as channel state, those
 * barriers leave the queue, blocked channels resume, and the task snapshots and forwards the
 * barrier at once, back pressure or not. Records that arrive on a channel before its barrier are
 * channel state too; when the barrier has arrived on every channel, the channel state is complete
 * and the snapshot's acknowledgement carries it. Every record taken is still processed as usual.
 *
 * Between tasks Weir has no output queue to overtake: a channel writer sends each batch at once,
 * credit bounds what is in flight, and all of it waits in the receiver's gate (or on its way
 * there, ahead of the barrier). So the input side holds every record in flight, and the channel
 * state is taken there only. An operator's own queue (async I/O) is its operator state already.
 *
 * One unaligned checkpoint records at a time: a barrier of a newer one aborts it on this task
 * (declined as subsumed), as in Flink.
 */
export class UnalignedBarrierHandler {
  readonly #options: UnalignedBarrierHandlerOptions;
  readonly #channelIndex = new Map<number, number>();
  readonly #arrivals = new Map<number, Arrival>();
  #recording: Recording | undefined;
  /** The newest checkpoint that went unaligned here. */
  #latestUnaligned = 0;
  #closed = false;

  constructor(options: UnalignedBarrierHandlerOptions) {
    this.#options = options;
    options.inputChannels.forEach((channel, index) => {
      this.#channelIndex.set(channel, index);
    });
  }

  /** The checkpoint recording channel state, if any (for tests and metrics). */
  get recordingCheckpointId(): number | undefined {
    return this.#recording?.checkpointId;
  }

  /** A barrier arrived on a channel (before it is queued): true when it was consumed here and must not be queued. */
  barrierArrived(message: BarrierMessage): boolean {
    const options = message.options;
    if (options === undefined || this.#closed) return false; // aligned only (a savepoint's, or cluster mode's)
    const id = message.location.checkpointId;
    const recording = this.#recording;
    if (recording !== undefined) {
      if (id === recording.checkpointId) {
        if (recording.channels.delete(message.channel) && recording.channels.size === 0) this.#complete(recording);
        return true;
      }
      if (id < recording.checkpointId) return true;
      this.#abortRecording(
        recording,
        'CHECKPOINT_DECLINED_SUBSUMED',
        `the barrier of checkpoint ${id} arrived before every barrier of checkpoint ${recording.checkpointId}`,
      );
    }
    if (id <= this.#latestUnaligned) return true; // went unaligned already: its barriers are done with
    if (!this.#arrivals.has(id)) this.#watch(id, message.location, options);
    return false; // queued: the aligned handler takes it in order, unless the checkpoint goes unaligned first
  }

  /** Records arrived on a channel (before they are queued): channel state while the channel's barrier is still to come. */
  recordsArrived(message: RecordsMessage): void {
    const recording = this.#recording;
    if (recording === undefined || !recording.channels.has(message.channel)) return;
    this.#take(recording, message);
  }

  /** The coordinator aborted a checkpoint: a recording of it (or an older one) ends without an acknowledgement. */
  checkpointAborted(checkpointId: number): void {
    const recording = this.#recording;
    if (recording !== undefined && recording.checkpointId <= checkpointId) {
      this.#recording = undefined;
      recording.resolve({ kind: 'aborted' });
    }
    for (const [id, arrival] of this.#arrivals) {
      if (id > checkpointId) continue;
      clearTimeout(arrival.timer);
      this.#arrivals.delete(id);
    }
  }

  close(): void {
    this.#closed = true;
    for (const arrival of this.#arrivals.values()) clearTimeout(arrival.timer);
    this.#arrivals.clear();
    const recording = this.#recording;
    this.#recording = undefined;
    recording?.resolve({ kind: 'aborted' });
  }

  /** The first barrier of a checkpoint that may go unaligned: it does once its aligned time is up. */
  #watch(id: number, location: CheckpointLocation, options: CheckpointOptions): void {
    for (const [older, arrival] of this.#arrivals) {
      if (older >= id) continue;
      clearTimeout(arrival.timer);
      this.#arrivals.delete(older);
    }
    const now = Date.now();
    const arrival: Arrival = { location, options, arrivedAt: now, timer: undefined, scheduled: false };
    this.#arrivals.set(id, arrival);
    const remaining = options.alignedCheckpointTimeout - (now - options.triggeredAt);
    if (remaining <= 0) this.#schedule(id, arrival);
    else {
      arrival.timer = setTimeout(() => this.#schedule(id, arrival), remaining);
      arrival.timer.unref?.();
    }
  }

  #schedule(id: number, arrival: Arrival): void {
    arrival.timer = undefined;
    if (arrival.scheduled || this.#closed) return;
    arrival.scheduled = true;
    this.#options.runInLoop(() => this.#switchToUnaligned(id));
  }

  /** On the task's loop: checkpoint `id` goes unaligned here, unless it was taken (or made moot) meanwhile. */
  async #switchToUnaligned(id: number): Promise<void> {
    const arrival = this.#arrivals.get(id);
    if (arrival === undefined || this.#closed) return;
    this.#arrivals.delete(id);
    const { gate, aligned, controller, inputChannels } = this.#options;
    if (this.#recording !== undefined || id <= this.#latestUnaligned) return;
    if (aligned.currentCheckpointId > id) return; // a newer checkpoint reached this task: this one is moot
    if (aligned.currentCheckpointId === id && aligned.state.checkpointId !== id) return; // taken aligned (or given up) already
    aligned.abortAlignment(id, controller); // an older alignment still in progress is moot
    // Channels that delivered their barrier to the aligned handler are blocked: what they hold came after it.
    const done = new Set<number>();
    if (aligned.state.checkpointId === id) for (const channel of inputChannels) if (gate.isBlocked(channel)) done.add(channel);
    let resolve!: (result: ChannelStateResult) => void;
    const channelState = new Promise<ChannelStateResult>((settle) => {
      resolve = settle;
    });
    const recording: Recording = {
      checkpointId: id,
      writer: new ChannelStateWriter(id, inputChannels.length),
      channels: new Set(inputChannels.filter((channel) => !done.has(channel))),
      resolve,
    };
    this.#recording = recording;
    this.#latestUnaligned = id;
    const delivered = gate.overtake(id, done, (message) => this.#take(recording, message));
    for (const channel of delivered) recording.channels.delete(channel);
    aligned.switchedToUnaligned(id, controller);
    if (this.#recording === recording && recording.channels.size === 0) this.#complete(recording);
    await controller.triggerCheckpoint(arrival.location, Date.now() - arrival.arrivedAt, arrival.options, channelState);
  }

  #take(recording: Recording, message: RecordsMessage): void {
    try {
      recording.writer.add(this.#channelIndex.get(message.channel) as number, this.#options.inputIndexOf(message.channel), message.records, message.timestamps);
    } catch (error) {
      this.#abortRecording(recording, 'CHECKPOINT_DECLINED', error instanceof Error ? error.message : String(error));
    }
  }

  #complete(recording: Recording): void {
    this.#recording = undefined;
    let bytes: Uint8Array | undefined;
    try {
      bytes = recording.writer.finish();
    } catch (error) {
      this.#options.controller.abortCheckpoint(recording.checkpointId, {
        reason: 'CHECKPOINT_DECLINED',
        message: error instanceof Error ? error.message : String(error),
      });
      recording.resolve({ kind: 'aborted' });
      return;
    }
    recording.resolve({ kind: 'complete', uid: this.#options.channelStateUid, bytes });
  }

  /** Gives up the recording checkpoint on this task: declined with `reason`, no acknowledgement. */
  #abortRecording(recording: Recording, reason: CheckpointFailureReason, message: string): void {
    if (this.#recording !== recording) return;
    this.#recording = undefined;
    this.#options.controller.abortCheckpoint(recording.checkpointId, { reason, message });
    recording.resolve({ kind: 'aborted' });
  }
}
