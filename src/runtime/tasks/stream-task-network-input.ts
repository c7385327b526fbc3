import type { CheckpointFailure } from '../../checkpoint/checkpoint-failure-reason.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { ChannelMessage } from '../io/channel-message.ts';
import type { BarrierHandlerController, CheckpointBarrierHandler } from '../io/checkpointing/checkpoint-barrier-handler.ts';
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
  /** Every barrier of a checkpoint is in (the barrier handler says when). */
  checkpointState: (location: CheckpointLocation, alignmentMs: number) => Promise<void>;
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
 * blocks and resumes channels through the gate.
 */
export class StreamTaskNetworkInput implements MailboxDefaultAction {
  readonly #options: NetworkInputOptions;
  readonly #gate = new InputGate();
  readonly #valve: StatusWatermarkValve;
  /** Channel id -> its index in the valve. */
  readonly #channelIndex = new Map<number, number>();
  readonly #ended = new Set<number>();
  readonly #controller: BarrierHandlerController;
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
      triggerCheckpoint: (location, alignmentMs) => options.checkpointState(location, alignmentMs),
      abortCheckpoint: (checkpointId, failure) => options.abortCheckpoint(checkpointId, failure),
    };
  }

  /** A message arrived on one of the task's channels. */
  push(message: ChannelMessage): void {
    this.#gate.push(message);
  }

  async processInput(): Promise<InputStatus> {
    const message = this.#gate.poll();
    if (message === undefined) return 'NOTHING_AVAILABLE';
    const { chain, metrics } = this.#options;
    switch (message.kind) {
      case 'records':
        metrics.recordsIn += message.records.length;
        await chain.processBatch(message.records, message.timestamps, 0, (this.#options.inputIndexOf?.get(message.channel) ?? 0) === 1);
        this.#options.returnCredit(message.channel);
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
        await this.#options.barrierHandler.processBarrier(message.channel, message.location, this.#controller);
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
