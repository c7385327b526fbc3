/**
 * Runs one operator outside a task (Flink's KeyedOneInputStreamOperatorTestHarness): a keyed
 * backend over a range of key groups, side outputs and metrics collected, processing-time
 * callbacks recorded, and snapshots of the keyed state for restore tests.
 */

import type { MetricCounter } from '../../../../src/core/metrics/metric-group.ts';
import type { OperatorContext, StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import { HeapKeyedStateBackend } from '../../../../src/state/heap-keyed-state-backend.ts';
import type { KeyGroupRange } from '../../../../src/state/key-group-range.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../../../src/state/key-group-range-assignment.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';

export interface Emitted<T> {
  records: T[];
  timestamps: number[] | undefined;
}

/** What an operator sent down the chain on its own (context.emit and context.emitWatermark), in order. */
export type Emission = { records: unknown[]; timestamps: number[] | undefined } | { watermark: number };

export class OperatorHarness<IN, OUT> {
  readonly operator: StreamOperator<IN, OUT>;
  readonly backend: HeapKeyedStateBackend;
  readonly operatorState: OperatorStateBackend;
  readonly emitted: Emission[] = [];
  /** Mails the operator queued (context.executeMail), not yet run: {@link runMails} runs them. */
  readonly mails: (() => Promise<void>)[] = [];
  readonly sideOutputs = new Map<string, { record: unknown; timestamp: number }[]>();
  readonly counters = new Map<string, number>();
  readonly processingTimeRequests: number[] = [];

  constructor(
    operator: StreamOperator<IN, OUT>,
    options: { range?: KeyGroupRange; maxParallelism?: number; snapshots?: Uint8Array[]; operatorState?: OperatorStateBackend } = {},
  ) {
    const maxParallelism = options.maxParallelism ?? 128;
    this.operator = operator;
    this.operatorState = options.operatorState ?? new OperatorStateBackend();
    this.backend = new HeapKeyedStateBackend({
      maxParallelism,
      keyGroupRange: options.range ?? computeKeyGroupRangeForOperatorIndex(maxParallelism, 1, 0),
      operatorName: 'test operator',
    });
    if (options.snapshots !== undefined) this.backend.restore(options.snapshots);
  }

  /** Opens the operator; as a subtask of `parallelism`. */
  async open(subtaskIndex = 0, parallelism = 1): Promise<this> {
    const counters = this.counters;
    const context: OperatorContext = {
      jobName: 'test',
      operatorName: 'test operator',
      uid: 'test',
      subtaskIndex,
      parallelism,
      maxParallelism: this.backend.maxParallelism,
      attemptNumber: 0,
      restoredCheckpointId: undefined,
      restoredTransactionsCommitted: false,
      checkpointingMode: 'exactly-once',
      keyedState: this.backend,
      operatorState: this.operatorState,
      metrics: {
        counter: (name): MetricCounter => ({
          inc: (n = 1) => {
            counters.set(name, (counters.get(name) ?? 0) + n);
          },
        }),
        gauge: () => {},
      },
      currentProcessingTime: Date.now,
      requestProcessingTimeCallback: (timestamp) => {
        this.processingTimeRequests.push(timestamp);
      },
      output: (tag, record, timestamp) => {
        const list = this.sideOutputs.get(tag) ?? [];
        list.push({ record, timestamp });
        this.sideOutputs.set(tag, list);
        return true;
      },
      executeMail: (action) => {
        this.mails.push(action);
      },
      emit: async (records, timestamps) => {
        if (records.length > 0) this.emitted.push({ records: [...records], timestamps: timestamps === undefined ? undefined : [...timestamps] });
      },
      emitWatermark: async (watermark) => {
        this.emitted.push({ watermark });
      },
    };
    await this.operator.open(context);
    return this;
  }

  async process(records: IN[], timestamps?: number[]): Promise<Emitted<OUT>> {
    this.operator.outputTimestamps = undefined;
    const out = await this.operator.processBatch(records, timestamps);
    return { records: out, timestamps: this.operator.outputTimestamps };
  }

  async process2(records: unknown[], timestamps?: number[]): Promise<Emitted<OUT>> {
    this.operator.outputTimestamps = undefined;
    const out = await this.operator.processBatch2(records, timestamps);
    return { records: out, timestamps: this.operator.outputTimestamps };
  }

  async watermark(watermark: number): Promise<Emitted<OUT>> {
    this.operator.outputTimestamps = undefined;
    const out = await this.operator.processWatermark(watermark);
    return { records: out, timestamps: this.operator.outputTimestamps };
  }

  async processingTime(now: number): Promise<Emitted<OUT>> {
    this.operator.outputTimestamps = undefined;
    const out = await this.operator.onProcessingTime(now);
    return { records: out, timestamps: this.operator.outputTimestamps };
  }

  /** Runs the queued mails (and the ones they queue) as the task's loop would. */
  async runMails(): Promise<void> {
    for (let mail = this.mails.shift(); mail !== undefined; mail = this.mails.shift()) await mail();
  }

  async endInput(): Promise<Emitted<OUT>> {
    this.operator.outputTimestamps = undefined;
    const out = await this.operator.endInput();
    return { records: out, timestamps: this.operator.outputTimestamps };
  }

  snapshot(): Uint8Array {
    return this.backend.snapshot();
  }
}
