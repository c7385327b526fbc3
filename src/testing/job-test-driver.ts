import { parseEnvironmentConfig } from '../core/config/environment-config.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { StateDescriptor } from '../core/state/state-descriptors.ts';
import type { KeyLike } from '../core/state/state-key.ts';
import { buildStreamGraph, type Job } from '../graph/job.ts';
import { buildJobGraph } from '../graph/job-graph.ts';
import type { StreamGraph, StreamNode } from '../graph/stream-graph.ts';
import { AsyncWaitOperator } from '../runtime/operators/async-wait-operator.ts';
import { compositeKeySelector } from '../state/composite-key.ts';
import { DriverNode, type NodeOutput, type NodeSnapshot } from './driver-node.ts';

/** What {@link JobTestDriver.snapshot} gives: every operator's state by uid (format version 1), for {@link JobTestDriver.create}'s `restore`. */
export interface JobTestSnapshot {
  readonly version: 1;
  readonly checkpointId: number;
  readonly operators: ReadonlyMap<string, NodeSnapshot>;
}

export interface JobTestDriverOptions {
  /** The driver's processing time at the start (default 0); it moves only with {@link JobTestDriver.advanceProcessingTime}. */
  startTime?: number;
  /** Start from a snapshot of an earlier driver of the same job (Flink's harness initializeState). */
  restore?: JobTestSnapshot;
}

/** A record a sink received, with its event time (NaN: none). */
export interface TestOutputRecord<T> {
  record: T;
  timestamp: number;
}

const identityKey = compositeKeySelector((key: KeyLike) => key);

/**
 * Runs a job's logic in one thread, deterministically, without Kafka, workers or checkpoints on
 * disk (Kafka Streams' TopologyTestDriver, Flink's operator test harnesses). The job's graph is
 * built as `weir run` builds it, every operator at parallelism 1: records piped into a source
 * (named by its uid or name) go through the operators at once; processing time and watermarks move
 * only when the test moves them; what reaches a sink is read back by the sink's uid or name; keyed
 * state is read by operator uid and key; `snapshot()` and `create(job, { restore })` check that
 * state survives a restore. Sources and sinks are not run: the driver stands in for both.
 *
 * ```ts
 * const driver = await JobTestDriver.create(job);
 * await driver.pipeInput('payments', [{ account: 'a', amount: 5 }]);
 * assert.deepEqual(driver.readOutput('balances-out'), [{ account: 'a', amount: 5, balance: 5 }]);
 * ```
 */
export class JobTestDriver {
  readonly #name: string;
  readonly #graph: StreamGraph;
  readonly #nodes: DriverNode[];
  readonly #mails: (() => Promise<void>)[] = [];
  /** The driver's processing time, shared with the state backends' TTL clocks. */
  readonly #clock: { now: number };
  #checkpointId: number;
  #ended = false;

  private constructor(name: string, graph: StreamGraph, nodes: DriverNode[], clock: { now: number }, checkpointId: number) {
    this.#name = name;
    this.#graph = graph;
    this.#nodes = nodes;
    this.#clock = clock;
    this.#checkpointId = checkpointId;
  }

  static async create(job: Job, options: JobTestDriverOptions = {}): Promise<JobTestDriver> {
    const config = parseEnvironmentConfig(job.config ?? {});
    const graph = buildStreamGraph(job);
    const restore = options.restore;
    if (restore !== undefined && restore.version !== 1) {
      throw new WeirError('INVALID_CONFIG', `JobTestDriver.create restore: a snapshot of format version ${String(restore.version)}, not 1`, {
        hint: 'restore a snapshot this version of Weir took',
      });
    }
    // The job's plan as `weir run` makes it: its uids (by which snapshots are restored) and its checks.
    const plan = buildJobGraph(job.name, graph, config);
    const clock = { now: options.startTime ?? 0 };
    const nodes = graph.nodes.map((node) => {
      const uid = (plan.nodes[node.id] as { uid: string }).uid;
      const keyed = graph.inputsOf(node.id).some((edge) => edge.partitioning === 'hash') || (node.kind === 'operator' && node.reinterpretedKeyed === true);
      return new DriverNode(node, uid, { keyed, maxParallelism: config.maxParallelism, restore: restore?.operators.get(uid), clock: () => clock.now });
    });
    const driver = new JobTestDriver(job.name, graph, nodes, clock, restore?.checkpointId ?? 0);
    for (const node of nodes) await node.open(job.name, config.maxParallelism, restore?.checkpointId, driver.#output);
    await driver.#settle();
    return driver;
  }

  /** The driver's processing time. */
  get currentProcessingTime(): number {
    return this.#clock.now;
  }

  /**
   * Records into the source `source` (its uid or name), in order. Their event time is `timestamps[i]`,
   * or else what the source's watermark strategy's timestamp assigner gives; none without either.
   * Resolves once they and whatever they set off (async I/O results too) have gone through the job.
   */
  async pipeInput<T>(source: string, records: readonly T[], timestamps?: readonly number[]): Promise<void> {
    const node = this.#find(source, 'source');
    if (node.node.kind !== 'source') throw new Error('unreachable');
    if (timestamps !== undefined && timestamps.length !== records.length) {
      throw new WeirError('INVALID_CONFIG', `pipeInput("${source}"): ${records.length} records but ${timestamps.length} timestamps`, {
        hint: 'give one timestamp per record, or none',
      });
    }
    const assigner = node.node.watermarkStrategy?.timestampAssigner;
    const stamps = timestamps ?? (assigner === undefined ? undefined : records.map((record) => assigner(record as never, undefined)));
    await this.#send(node, [...records], stamps === undefined ? undefined : [...stamps], undefined);
    await this.#settle();
  }

  /** Event time reaches `watermark` at the source `source` (its uid or name), or at every source: windows and event-time timers up to it fire. */
  async advanceWatermark(watermark: number, source?: string): Promise<void> {
    const sources = source === undefined ? this.#nodes.filter((node) => node.node.kind === 'source') : [this.#find(source, 'source')];
    for (const node of sources) await this.#watermark(node, watermark);
    await this.#settle();
  }

  /** Moves processing time forward by `milliseconds`, firing every processing-time timer and window that falls due, in time order. */
  async advanceProcessingTime(milliseconds: number): Promise<void> {
    const target = this.#clock.now + milliseconds;
    for (;;) {
      let due: { node: DriverNode; time: number } | undefined;
      for (const node of this.#nodes) {
        for (const time of node.timerRequests) if (time <= target && (due === undefined || time < due.time)) due = { node, time };
      }
      if (due === undefined) break;
      this.#clock.now = Math.max(this.#clock.now, due.time);
      for (const time of [...due.node.timerRequests]) if (time <= this.#clock.now) due.node.timerRequests.delete(time);
      const now = this.#clock.now;
      await due.node.call(this.#output, (operator) => operator.onProcessingTime(now));
      await this.#settle();
    }
    this.#clock.now = target;
  }

  /** Every input ends (a bounded job's end): event time goes to its end, so every window fires, and each operator emits what it holds. */
  async endInput(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    await this.advanceWatermark(Number.POSITIVE_INFINITY);
    for (const node of this.#nodes) {
      if (node.operator !== undefined) await node.call(this.#output, (operator) => operator.endInput());
      await this.#settle();
    }
  }

  /** What the sink `sink` (its uid or name) received since the last read, in order; the read takes it. */
  readOutput<T>(sink: string): T[] {
    return this.readOutputWithTimestamps<T>(sink).map((entry) => entry.record);
  }

  readOutputWithTimestamps<T>(sink: string): TestOutputRecord<T>[] {
    return this.#find(sink, 'sink').received.splice(0) as TestOutputRecord<T>[];
  }

  /** The keyed state `descriptor` of the operator `operator` (its uid or name) for `key`: read it at once (the handle follows the current key). */
  keyedState<S>(operator: string, descriptor: StateDescriptor<S>, key: KeyLike): S {
    const node = this.#find(operator, 'operator');
    if (node.keyed === undefined) {
      throw new WeirError('INVALID_CONFIG', `keyedState("${operator}"): the operator is not keyed`, { hint: 'read the state of an operator after keyBy(...)' });
    }
    node.keyed.setCurrentKey(identityKey(key));
    return node.keyed.getState(descriptor);
  }

  /** A counter or gauge of an operator (its uid or name), as its metric group holds it: `user.<name>` for a function's own. */
  metric(operator: string, name: string): number | undefined {
    const node = this.#find(operator, 'operator');
    return node.counters.get(name) ?? node.gauges.get(name)?.();
  }

  /** A checkpoint of every operator, as the barrier would take it (snapshot hooks first; then "complete"). */
  async snapshot(): Promise<JobTestSnapshot> {
    const checkpointId = ++this.#checkpointId;
    const operators = new Map<string, NodeSnapshot>();
    for (const node of this.#nodes) {
      await node.operator?.snapshotState(checkpointId);
      operators.set(node.uid, node.snapshot());
    }
    for (const node of this.#nodes) await node.operator?.notifyCheckpointComplete(checkpointId);
    await this.#settle();
    return { version: 1, checkpointId, operators };
  }

  /** Closes every operator (async calls in flight are aborted). */
  async close(): Promise<void> {
    for (const node of this.#nodes) await node.operator?.close();
  }

  readonly #output: NodeOutput = {
    records: (from, records, timestamps, tag) => this.#forward(from, records, timestamps, tag),
    watermark: (from, watermark) => this.#forwardWatermark(from, watermark),
    mail: (action) => void this.#mails.push(action),
    now: () => this.#clock.now,
  };

  async #forward(from: DriverNode, records: unknown[], timestamps: number[] | undefined, tag: string | undefined): Promise<void> {
    for (const edge of this.#graph.outputsOf(from.node.id)) {
      if (edge.outputTag !== tag) continue;
      await this.#send(this.#nodes[edge.target] as DriverNode, records, timestamps, edge.inputIndex === 1 ? 1 : 0);
    }
  }

  async #send(node: DriverNode, records: unknown[], timestamps: number[] | undefined, inputIndex: 0 | 1 | undefined): Promise<void> {
    if (records.length === 0) return;
    switch (node.node.kind) {
      case 'source':
        await this.#forward(node, records, timestamps, undefined);
        return;
      case 'sink':
        for (let i = 0; i < records.length; i++) node.received.push({ record: records[i], timestamp: timestamps?.[i] ?? Number.NaN });
        return;
      case 'operator':
        await node.call(this.#output, (operator) =>
          inputIndex === 1 ? operator.processBatch2(records, timestamps) : operator.processBatch(records, timestamps),
        );
    }
  }

  /** A node's watermark: the minimum of its inputs'; when it rises, the operator fires its timers, and (unless it holds watermarks) it goes on. */
  async #watermark(node: DriverNode, watermark: number): Promise<void> {
    if (watermark <= node.watermark) return;
    node.watermark = watermark;
    if (node.operator !== undefined) {
      await node.call(this.#output, (operator) => operator.processWatermark(watermark));
      if (node.operator.holdsWatermarks) return;
    }
    await this.#forwardWatermark(node, watermark);
  }

  async #forwardWatermark(from: DriverNode, watermark: number): Promise<void> {
    for (const edge of this.#graph.outputsOf(from.node.id)) {
      const target = this.#nodes[edge.target] as DriverNode;
      target.inputWatermarks.set(edge, watermark);
      const inputs = this.#graph.inputsOf(target.node.id).map((input) => target.inputWatermarks.get(input) ?? Number.NEGATIVE_INFINITY);
      await this.#watermark(target, Math.min(...inputs));
    }
  }

  /** Runs the operators' mails, and waits for async I/O in flight, until nothing is left. */
  async #settle(): Promise<void> {
    for (;;) {
      for (let mail = this.#mails.shift(); mail !== undefined; mail = this.#mails.shift()) await mail();
      const inFlight = this.#nodes.some((node) => node.operator instanceof AsyncWaitOperator && node.operator.inFlight > 0);
      if (!inFlight && this.#mails.length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, inFlight ? 1 : 0));
    }
  }

  #find(name: string, kind: StreamNode['kind']): DriverNode {
    const node = this.#nodes.find((candidate) => candidate.node.kind === kind && (candidate.uid === name || candidate.node.name === name));
    if (node === undefined) {
      const known = this.#nodes.filter((candidate) => candidate.node.kind === kind).map((candidate) => candidate.uid);
      throw new WeirError('INVALID_CONFIG', `job "${this.#name}" has no ${kind} with the uid or name "${name}"`, {
        hint: `its ${kind}s: ${known.join(', ') || 'none'}`,
      });
    }
    return node;
  }
}
