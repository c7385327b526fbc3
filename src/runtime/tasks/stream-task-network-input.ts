import type { CheckpointFailure } from '../../checkpoint/checkpoint-failure-reason.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { ChannelMessage } from '../io/channel-message.ts';
import type { BarrierHandlerController, ChannelStateResult, CheckpointBarrierHandler } from '../io/checkpointing/checkpoint-barrier-handler.ts';
import type { CheckpointOptions } from '../io/checkpointing/checkpoint-options.ts';
import { SingleCheckpointBarrierHandler } from '../io/checkpointing/single-checkpoint-barrier-handler.ts';
import { UnalignedBarrierHandler } from '../io/checkpointing/unaligned-barrier-handler.ts';
import { InputGate } from '../io/input-gate.ts';
import type { TaskMetrics } from '../metrics/task-metrics.ts';
import { StatusWatermarkValve, type WatermarkEvent } from '../watermarks/status-watermark-valve.ts';
import type { InputStatus, MailboxDefaultAction } from './mailbox-processor.ts';
import type { OperatorChain } from './operator-chain.ts';

export interface NetworkInputOptions {
  /** The task's input channels, in the valve's order. */
  inputChannels: readonly number[];
  /** Which input (0 or 1) of the head operator each channel feeds; channels not listed feed input 0. */
  inputIndexOf?: ReadonlyMap<number, number> | undefined;
  chain: OperatorChain;
  barrierHandler: CheckpointBarrierHandler;
  metrics: TaskMetrics;
  /** Gives one batch of credit back to the channel's sender, once its batch went through the chain. */
  returnCredit: (channel: number) => void;
  /** Every barrier of a checkpoint is in, or (unaligned) the first one is (the barrier handler says when). */
  checkpointState: (
    location: CheckpointLocation,
    alignmentMs: number,
    options: CheckpointOptions | undefined,
    channelState: Promise<ChannelStateResult> | undefined,
  ) => Promise<void>;
  /**
   * Unaligned checkpoints on (`checkpointing.unaligned`; the barrier handler is then the aligned
   * one): the uid the task's channel state goes under, and how to run an action on the task's loop.
   */
  unaligned?: { channelStateUid: string; runInLoop: (action: () => Promise<void>) => void } | undefined;
  /** The barrier handler gave up a checkpoint on this task. */
  abortCheckpoint: (checkpointId: number, failure: CheckpointFailure) => void;
  /** Every channel has ended: the task's input has ended. */
  onEndOfInput: () => Promise<void>;
}

/**
 * The input of a task fed by channels (Flink's StreamTaskNetworkInput with its checkpointed input
 * gate): one message at a time, in order per channel. Records go through the chain and return
 * their credit; watermarks and statuses go through the valve (the minimum over the channels, idle
 * ones left out), whose result goes through the chain; barriers go to the barrier handler, which
 * blocks and resumes channels through the gate. With unaligned checkpoints, barriers and records
 * are also seen as they arrive, by the {@link UnalignedBarrierHandler}: a barrier that goes
 * unaligned overtakes what is queued, which becomes channel state.
 */
export class StreamTaskNetworkInput implements MailboxDefaultAction {
  readonly #options: NetworkInputOptions;
  readonly #gate = new InputGate();
  readonly #valve: StatusWatermarkValve;
  /** Channel id -> its index in the valve. */
  readonly #channelIndex = new Map<number, number>();
  readonly #ended = new Set<number>();
  readonly #controller: BarrierHandlerController;
  readonly #unaligned: UnalignedBarrierHandler | undefined;
  #watermarkEvents: WatermarkEvent[] = [];

  constructor(options: NetworkInputOptions) {
    this.#options = options;
    options.inputChannels.forEach((channel, index) => {
      this.#channelIndex.set(channel, index);
    });
    this.#valve = new StatusWatermarkValve(options.inputChannels.length);
    this.#controller = {
      blockChannel: (channel) => this.#gate.blockConsumption(channel),
      resumeAllChannels: () => this.#gate.resumeConsumption(),
      triggerCheckpoint: (location, alignmentMs, checkpointOptions, channelState) =>
        options.checkpointState(location, alignmentMs, checkpointOptions, channelState),
      abortCheckpoint: (checkpointId, failure) => options.abortCheckpoint(checkpointId, failure),
    };
    const { unaligned, barrierHandler } = options;
    this.#unaligned =
      unaligned === undefined || !(barrierHandler instanceof SingleCheckpointBarrierHandler)
        ? undefined
        : new UnalignedBarrierHandler({
            gate: this.#gate,
            aligned: barrierHandler,
            controller: this.#controller,
            inputChannels: options.inputChannels,
            inputIndexOf: (channel) => options.inputIndexOf?.get(channel) ?? 0,
            channelStateUid: unaligned.channelStateUid,
            runInLoop: unaligned.runInLoop,
          });
  }

  /** A message arrived on one of the task's channels. */
  push(message: ChannelMessage): void {
    const unaligned = this.#unaligned;
    if (unaligned !== undefined) {
      if (message.kind === 'barrier') {
        if (unaligned.barrierArrived(message)) return;
      } else if (message.kind === 'records') unaligned.recordsArrived(message);
    }
    this.#gate.push(message);
  }

  /** A restored checkpoint's channel state: replayed before any new input (its records return no credit). */
  recover(messages: readonly ChannelMessage[]): void {
    this.#gate.recover(messages);
  }

  /** The coordinator aborted a checkpoint: channel state still recorded for it is dropped. */
  checkpointAborted(checkpointId: number): void {
    this.#unaligned?.checkpointAborted(checkpointId);
  }

  close(): void {
    this.#unaligned?.close();
  }

  async processInput(): Promise<InputStatus> {
    const message = this.#gate.poll();
    if (message === undefined) return 'NOTHING_AVAILABLE';
    const { chain, metrics } = this.#options;
    switch (message.kind) {
      case 'records':
        metrics.recordsIn += message.records.length;
        await chain.processBatch(message.records, message.timestamps, 0, (this.#options.inputIndexOf?.get(message.channel) ?? 0) === 1);
        if (message.recovered !== true) this.#options.returnCredit(message.channel);
        break;
      case 'watermark':
        this.#valve.inputWatermark(this.#channelIndex.get(message.channel) as number, message.watermark, this.#watermarkEvents);
        await this.#emitWatermarkEvents();
        break;
      case 'watermark-status':
        this.#valve.inputWatermarkStatus(this.#channelIndex.get(message.channel) as number, message.idle, this.#watermarkEvents);
        await this.#emitWatermarkEvents();
        break;
      case 'barrier':
        await this.#options.barrierHandler.processBarrier(message.channel, message.location, this.#controller, message.options);
        break;
      case 'end-of-data':
        this.#ended.add(message.channel);
        this.#valve.endOfInput(this.#channelIndex.get(message.channel) as number, this.#watermarkEvents);
        await this.#emitWatermarkEvents();
        if (this.#ended.size === this.#options.inputChannels.length) await this.#options.onEndOfInput();
        break;
      case 'credit':
        break; // credit goes to the sending side's channel writer, never into a task's input
    }
    return 'MORE_AVAILABLE';
  }

  /** Emits what the valve produced: statuses downstream, watermarks through the chain and downstream. */
  async #emitWatermarkEvents(): Promise<void> {
    const events = this.#watermarkEvents;
    if (events.length === 0) return;
    this.#watermarkEvents = [];
    for (const event of events) {
      if (event.kind === 'watermark') await this.#options.chain.advanceWatermark(event.watermark);
      else this.#options.chain.broadcastWatermarkStatus(event.kind === 'idle');
    }
  }
}
