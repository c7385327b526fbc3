import type { MetricCounter, OperatorMetricGroup } from '../core/metrics/metric-group.ts';
import type { OperatorContext, StreamOperator } from '../core/operator/stream-operator.ts';
import type { StreamEdge, StreamNode } from '../graph/stream-graph.ts';
import { AsyncWaitOperator } from '../runtime/operators/async-wait-operator.ts';
import { HeapKeyedStateBackend } from '../state/heap-keyed-state-backend.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../state/key-group-range-assignment.ts';
import { OperatorStateBackend } from '../state/operator-state-backend.ts';
import { DriverTimers } from './driver-timers.ts';

/** What a node sends on, as the driver routes it: records (main output or a side output's tag) or a watermark. */
export interface NodeOutput {
  records(node: DriverNode, records: unknown[], timestamps: number[] | undefined, tag: string | undefined): Promise<void>;
  watermark(node: DriverNode, watermark: number): Promise<void>;
  mail(action: () => Promise<void>): void;
  now(): number;
}

/** One node's saved state in a driver snapshot. */
export interface NodeSnapshot {
  keyed: Uint8Array | undefined;
  operator: Uint8Array | undefined;
}

/**
 * One node of the job in the test driver: its operator (for an operator node), its keyed and
 * operator state, its metrics, the processing times it asked for (and an async I/O operator's
 * timers) and its inputs' watermarks.
 */
export class DriverNode {
  readonly node: StreamNode;
  readonly uid: string;
  readonly operator: StreamOperator<unknown, unknown> | undefined;
  readonly keyed: HeapKeyedStateBackend | undefined;
  readonly operatorState: OperatorStateBackend;
  readonly counters = new Map<string, number>();
  readonly gauges = new Map<string, () => number>();
  /** Processing times the operator asked to be called at. */
  readonly timerRequests = new Set<number>();
  /** An async I/O operator's timeouts and retry delays, on the driver's clock. */
  readonly asyncTimers: DriverTimers | undefined;
  /** The watermark of each input edge, and the node's own: their minimum. */
  readonly inputWatermarks = new Map<StreamEdge, number>();
  watermark = Number.NEGATIVE_INFINITY;
  /** A sink's records and their timestamps, until read. */
  readonly received: { record: unknown; timestamp: number }[] = [];
  readonly #sideOutputs: { tag: string; record: unknown; timestamp: number }[] = [];

  constructor(node: StreamNode, uid: string, options: { keyed: boolean; maxParallelism: number; restore: NodeSnapshot | undefined; clock: () => number }) {
    this.node = node;
    this.uid = uid;
    this.operator = node.kind === 'operator' ? node.createOperator() : undefined;
    if (this.operator instanceof AsyncWaitOperator) {
      this.asyncTimers = new DriverTimers(options.clock);
      this.operator.useTimers(this.asyncTimers);
    }
    const { maxParallelism, restore } = options;
    this.keyed = options.keyed
      ? new HeapKeyedStateBackend({
          maxParallelism,
          keyGroupRange: computeKeyGroupRangeForOperatorIndex(maxParallelism, 1, 0),
          operatorName: node.name,
          clock: options.clock,
        })
      : undefined;
    if (restore?.keyed !== undefined) this.keyed?.restore([restore.keyed]);
    this.operatorState = restore?.operator === undefined ? new OperatorStateBackend() : OperatorStateBackend.restoreFor([restore.operator], 1, 0);
  }

  /** Opens the operator with a context whose time, mails and outputs are the driver's. */
  async open(jobName: string, maxParallelism: number, restoredCheckpointId: number | undefined, output: NodeOutput): Promise<void> {
    const operator = this.operator;
    if (operator === undefined) return;
    const metrics: OperatorMetricGroup = {
      counter: (name): MetricCounter => ({ inc: (n = 1) => void this.counters.set(name, (this.counters.get(name) ?? 0) + n) }),
      gauge: (name, read) => void this.gauges.set(name, read),
    };
    const context: OperatorContext = {
      jobName,
      operatorName: this.node.name,
      uid: this.uid,
      subtaskIndex: 0,
      parallelism: 1,
      maxParallelism,
      attemptNumber: 0,
      restoredCheckpointId,
      restoredTransactionsCommitted: false,
      checkpointingMode: 'exactly-once',
      keyedState: this.keyed,
      operatorState: this.operatorState,
      metrics,
      currentProcessingTime: () => output.now(),
      requestProcessingTimeCallback: (timestamp) => void this.timerRequests.add(timestamp),
      output: (tag, record, timestamp) => {
        this.#sideOutputs.push({ tag, record, timestamp });
        return true;
      },
      executeMail: (action) => output.mail(action),
      emit: (records, timestamps) => this.#emitted(output, records, timestamps),
      emitWatermark: (watermark) => output.watermark(this, watermark),
    };
    await operator.open(context);
  }

  /** Runs one call of the operator (a batch, a watermark, a timer, the end of input) and sends what it gave on, side outputs first. */
  async call(output: NodeOutput, run: (operator: StreamOperator<unknown, unknown>) => unknown[] | Promise<unknown[]>): Promise<void> {
    const operator = this.operator as StreamOperator<unknown, unknown>;
    operator.outputTimestamps = undefined;
    const out = await run(operator);
    await this.#emitted(output, out, operator.outputTimestamps);
  }

  async #emitted(output: NodeOutput, records: unknown[], timestamps: number[] | undefined): Promise<void> {
    const side = this.#sideOutputs.splice(0);
    for (const { tag, record, timestamp } of side) await output.records(this, [record], [timestamp], tag);
    if (records.length > 0) await output.records(this, records, timestamps, undefined);
  }

  snapshot(): NodeSnapshot {
    return {
      keyed: this.keyed === undefined || this.keyed.isEmpty() ? undefined : this.keyed.snapshot(),
      operator: this.operatorState.stateNames().length === 0 ? undefined : this.operatorState.snapshot(),
    };
  }
}
