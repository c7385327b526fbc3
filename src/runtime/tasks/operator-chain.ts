import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { StreamOperator } from '../../core/operator/stream-operator.ts';
import type { CheckpointableKeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import type { OperatorStateBackend } from '../../state/operator-state-backend.ts';
import type { CheckpointOptions } from '../io/checkpointing/checkpoint-options.ts';
import type { RecordWriter } from '../io/record-writer.ts';
import type { TaskMetrics } from '../metrics/task-metrics.ts';
import { isThenable } from './is-thenable.ts';

/** The state of one node of a task's chain, as the checkpoint path snapshots it. */
export interface OperatorStateHolder {
  uid: string;
  keyed: CheckpointableKeyedStateBackend | undefined;
  operatorState: OperatorStateBackend;
}

/** One operator of a task's chain. */
export interface ChainedOperator extends OperatorStateHolder {
  name: string;
  operator: StreamOperator<unknown, unknown>;
}

/** Side-output records of the chain's last operator, gathered during one call, by output tag. */
interface SideOutputBuffer {
  records: unknown[];
  timestamps: number[];
  writers: RecordWriter[];
}

/** The timestamps an operator set for what its last call returned (a function, so the type checker does not assume the `undefined` the chain wrote before the call). */
const timestampsOf = (operator: StreamOperator<unknown, unknown>): number[] | undefined => operator.outputTimestamps;

/**
 * The operators of one task and its outputs (Flink's OperatorChain): a batch goes through the
 * operators, each taking what the one before returned, and what comes out of the end goes to the
 * main output's record writers; side outputs of the last operator go to theirs. Watermarks go
 * through the chain the same way (each operator fires its event-time timers in turn, and what they
 * emit runs through the rest of the chain first), then downstream. Barriers, watermark statuses
 * and end of data go to every output.
 */
export class OperatorChain {
  readonly #operators: ChainedOperator[] = [];
  readonly #writers: RecordWriter[];
  readonly #mainWriters: RecordWriter[];
  readonly #sideOutputs = new Map<string, SideOutputBuffer>();
  readonly #metrics: TaskMetrics;
  #sideOutputPending = false;
  /** Whether this task last told its outputs it is idle. */
  #outputIdle = false;
  /** The watermark the chain's input has been advanced to. */
  #inputWatermark = Number.NEGATIVE_INFINITY;
  /** The watermark the chain has sent downstream. */
  #currentWatermark = Number.NEGATIVE_INFINITY;

  constructor(recordWriters: RecordWriter[], metrics: TaskMetrics) {
    this.#writers = recordWriters;
    this.#metrics = metrics;
    this.#mainWriters = recordWriters.filter((writer) => writer.outputTag === undefined);
    for (const writer of recordWriters) {
      if (writer.outputTag === undefined) continue;
      const buffer = this.#sideOutputs.get(writer.outputTag);
      if (buffer === undefined) this.#sideOutputs.set(writer.outputTag, { records: [], timestamps: [], writers: [writer] });
      else buffer.writers.push(writer);
    }
  }

  /** Appends an operator; returns its index in the chain (for its timers and side outputs). */
  add(operator: ChainedOperator): number {
    return this.#operators.push(operator) - 1;
  }

  get operators(): readonly ChainedOperator[] {
    return this.#operators;
  }

  /** Whether every output channel has credit. */
  get outputsAvailable(): boolean {
    for (const writer of this.#writers) if (!writer.available) return false;
    return true;
  }

  get currentWatermark(): number {
    return this.#currentWatermark;
  }

  /**
   * Runs a batch (with its records' timestamps, if any) through the chain from operator `from` on,
   * and emits what comes out of its end. `secondInput`: the batch is for input 2 of the head.
   */
  async processBatch(batch: unknown[], timestamps: number[] | undefined, from = 0, secondInput = false): Promise<void> {
    let current = batch;
    let stamps = timestamps;
    const operators = this.#operators;
    for (let i = from; i < operators.length && current.length > 0; i++) {
      const operator = (operators[i] as ChainedOperator).operator;
      operator.outputTimestamps = undefined;
      const out = secondInput && i === from ? operator.processBatch2(current, stamps) : operator.processBatch(current, stamps);
      current = isThenable(out) ? await out : out;
      stamps = timestampsOf(operator);
      if (stamps !== undefined && stamps.length !== current.length) throw this.#timestampMismatch(i, current.length, stamps.length);
      if (this.#sideOutputPending) this.#flushSideOutputs();
    }
    if (current.length > 0 && this.#mainWriters.length > 0) {
      this.#metrics.recordsOut += current.length;
      for (const writer of this.#mainWriters) writer.emit(current, stamps);
    }
  }

  /**
   * Event time reached `watermark`: each operator of the chain in turn fires its event-time timers
   * (what they emit goes through the rest of the chain first), then the watermark goes downstream.
   * An operator that holds watermarks back (async I/O) stops it there, and passes it on later with
   * {@link emitWatermarkFrom}.
   */
  async advanceWatermark(watermark: number): Promise<void> {
    if (watermark <= this.#inputWatermark) return;
    this.#inputWatermark = watermark;
    await this.#watermarkFrom(0, watermark);
  }

  /** Operator `index` passes on a watermark it held back: the operators after it, then downstream. */
  async emitWatermarkFrom(index: number, watermark: number): Promise<void> {
    await this.#watermarkFrom(index + 1, watermark);
  }

  /** Operator `index` emits records outside its calls' return values (async I/O's results): the rest of the chain, then the outputs. */
  async emitFrom(index: number, records: unknown[], timestamps: number[] | undefined): Promise<void> {
    if (timestamps !== undefined && timestamps.length !== records.length) throw this.#timestampMismatch(index, records.length, timestamps.length);
    if (this.#sideOutputPending) this.#flushSideOutputs();
    if (records.length > 0) await this.processBatch(records, timestamps, index + 1);
  }

  async #watermarkFrom(from: number, watermark: number): Promise<void> {
    // Downstream valves ignore watermarks from an idle channel (a drain's end of event time after
    // the input went quiet, say): announce the output active first, as Flink does.
    if (this.#outputIdle) this.broadcastWatermarkStatus(false);
    const operators = this.#operators;
    for (let i = from; i < operators.length; i++) {
      const operator = (operators[i] as ChainedOperator).operator;
      operator.outputTimestamps = undefined;
      let out = operator.processWatermark(watermark);
      if (isThenable(out)) out = await out;
      await this.#afterCall(i, out, timestampsOf(operator));
      if (operator.holdsWatermarks) return;
    }
    if (watermark <= this.#currentWatermark) return;
    this.#currentWatermark = watermark;
    this.#metrics.watermark = watermark;
    for (const writer of this.#writers) writer.broadcastWatermark(watermark);
  }

  /** Tells every output this task is idle (left out of the downstream minimum) or active again. */
  broadcastWatermarkStatus(idle: boolean): void {
    if (idle === this.#outputIdle) return;
    this.#outputIdle = idle;
    for (const writer of this.#writers) writer.broadcastWatermarkStatus(idle);
  }

  /** Processing time reached what operator `index` asked for: it runs its timers. */
  async onProcessingTime(index: number, now: number): Promise<void> {
    const operator = (this.#operators[index] as ChainedOperator).operator;
    operator.outputTimestamps = undefined;
    let out = operator.onProcessingTime(now);
    if (isThenable(out)) out = await out;
    await this.#afterCall(index, out, timestampsOf(operator));
  }

  /**
   * Every input has ended: the end of event time (Flink's MAX_WATERMARK at the end of input), so
   * every event-time timer and window fires; then each operator emits what it still holds, and the
   * outputs are told there is no more data.
   */
  async endInput(): Promise<void> {
    await this.advanceWatermark(Number.POSITIVE_INFINITY);
    for (let i = 0; i < this.#operators.length; i++) {
      const operator = (this.#operators[i] as ChainedOperator).operator;
      operator.outputTimestamps = undefined;
      let out = operator.endInput();
      if (isThenable(out)) out = await out;
      await this.#afterCall(i, out, timestampsOf(operator));
    }
    for (const writer of this.#writers) writer.broadcastEndOfData();
  }

  /**
   * Emits `record` on the side output `tag` of operator `index`, after the current call. Only the
   * chain's last operator can have side-output edges (a node with one does not chain on); a
   * source's side outputs (its dead letters) are index -1, in a chain of no operators.
   */
  sideOutput(index: number, tag: string, record: unknown, timestamp: number): boolean {
    if (index !== this.#operators.length - 1) return false;
    const buffer = this.#sideOutputs.get(tag);
    if (buffer === undefined) return false; // no stream reads this tag
    buffer.records.push(record);
    buffer.timestamps.push(timestamp);
    this.#sideOutputPending = true;
    return true;
  }

  /** Every operator's snapshot hook, as the barrier passes (a two-phase-commit sink pre-commits here). */
  async snapshotState(checkpointId: number): Promise<void> {
    for (const chained of this.#operators) {
      const done = chained.operator.snapshotState(checkpointId);
      if (isThenable(done)) await done;
    }
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    for (const chained of this.#operators) {
      const done = chained.operator.notifyCheckpointComplete(checkpointId);
      if (isThenable(done)) await done;
    }
  }

  async notifyCheckpointAborted(checkpointId: number): Promise<void> {
    for (const chained of this.#operators) {
      const done = chained.operator.notifyCheckpointAborted(checkpointId);
      if (isThenable(done)) await done;
    }
  }

  /** The barrier goes to every output, with its options (an unaligned checkpoint's barrier overtakes nothing here: a channel has no output queue). */
  broadcastBarrier(location: CheckpointLocation, options?: CheckpointOptions): void {
    for (const writer of this.#writers) writer.broadcastBarrier(location, options);
  }

  /** Closes every operator, then disposes of the keyed state backends (the disk backend's lmdb and working folder), also when a close failed. */
  async close(): Promise<void> {
    try {
      for (const chained of this.#operators) {
        const closed = chained.operator.close();
        if (isThenable(closed)) await closed;
      }
    } finally {
      for (const chained of this.#operators) await chained.keyed?.dispose?.();
    }
  }

  /** What an operator's call (timer, watermark, end of input) returned goes on down the chain. */
  async #afterCall(index: number, out: unknown[], timestamps: number[] | undefined): Promise<void> {
    if (timestamps !== undefined && timestamps.length !== out.length) throw this.#timestampMismatch(index, out.length, timestamps.length);
    if (this.#sideOutputPending) this.#flushSideOutputs();
    if (out.length > 0) await this.processBatch(out, timestamps, index + 1);
  }

  /** Sends what side outputs hold (a source's dead letters, after its poll). */
  flushSideOutputs(): void {
    if (this.#sideOutputPending) this.#flushSideOutputs();
  }

  #flushSideOutputs(): void {
    this.#sideOutputPending = false;
    for (const buffer of this.#sideOutputs.values()) {
      if (buffer.records.length === 0) continue;
      const { records, timestamps } = buffer;
      buffer.records = [];
      buffer.timestamps = [];
      const stamps = timestamps.every(Number.isNaN) ? undefined : timestamps;
      for (const writer of buffer.writers) writer.emit(records, stamps);
    }
  }

  #timestampMismatch(index: number, records: number, timestamps: number): WeirError {
    return new WeirError(
      'TIMESTAMP_MISMATCH',
      `operator "${(this.#operators[index] as ChainedOperator).name}" returned ${records} records with ${timestamps} timestamps`,
      { fault: 'internal', hint: 'an operator that sets outputTimestamps must give one per record it returns' },
    );
  }
}
