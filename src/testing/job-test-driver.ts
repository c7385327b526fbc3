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
import { type EventLoopResources, eventLoopBusierThan, eventLoopResources } from './event-loop-activity.ts';

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
  /** The async I/O operators, whose calls in flight the driver waits for. */
  readonly #asyncOperators: AsyncWaitOperator<unknown, unknown>[];
  /** The driver's processing time, shared with the state backends' TTL clocks. */
  readonly #clock: { now: number };
  /** What kept the event loop alive before the job opened: a call in flight is waited for while there is more. */
  readonly #baseline: EventLoopResources;
  /**
   * The job's loop (a task's mailbox): input, watermarks, the end of input, processing-time
   * callbacks and the operators' mails run one after the other, each to its end, on this chain.
   */
  #loop: Promise<void> = Promise.resolve();
  /** Work on the loop not finished; more than 0 after a call returned: held up on driver time (an async operator full, or ending its queue). */
  #queued = 0;
  /** Work finished on the loop so far (how the driver sees it move). */
  #finished = 0;
  /** The first error of the loop's work, for the driver call that waits on it (or the next one). */
  #failure: { error: unknown } | undefined;
  #checkpointId: number;
  #ended = false;

  private constructor(name: string, graph: StreamGraph, nodes: DriverNode[], clock: { now: number }, checkpointId: number, baseline: EventLoopResources) {
    this.#name = name;
    this.#graph = graph;
    this.#nodes = nodes;
    this.#asyncOperators = nodes.flatMap((node) => (node.operator instanceof AsyncWaitOperator ? [node.operator] : []));
    this.#clock = clock;
    this.#checkpointId = checkpointId;
    this.#baseline = baseline;
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
    const baseline = eventLoopResources();
    // The job's plan as `weir run` makes it: its uids (by which snapshots are restored) and its checks.
    const plan = buildJobGraph(job.name, graph, config);
    const clock = { now: options.startTime ?? 0 };
    const nodes = graph.nodes.map((node) => {
      const uid = (plan.nodes[node.id] as { uid: string }).uid;
      const keyed = graph.inputsOf(node.id).some((edge) => edge.partitioning === 'hash') || (node.kind === 'operator' && node.reinterpretedKeyed === true);
      return new DriverNode(node, uid, { keyed, maxParallelism: config.maxParallelism, restore: restore?.operators.get(uid), clock: () => clock.now });
    });
    const driver = new JobTestDriver(job.name, graph, nodes, clock, restore?.checkpointId ?? 0, baseline);
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
   * Resolves once they and whatever they set off (async I/O results too) have gone through the job,
   * or once what is left waits on the driver's processing time: an async call whose answer nothing
   * in the process is working on (it waits for its timeout), a retry's delay, or records held back
   * by a full async operator; those go on when {@link advanceProcessingTime} passes their times.
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
    const batch = [...records];
    const batchStamps = stamps === undefined ? undefined : [...stamps];
    this.#enqueue(() => this.#send(node, batch, batchStamps, undefined));
    await this.#settle();
  }

  /** Event time reaches `watermark` at the source `source` (its uid or name), or at every source: windows and event-time timers up to it fire. */
  async advanceWatermark(watermark: number, source?: string): Promise<void> {
    const sources = source === undefined ? this.#nodes.filter((node) => node.node.kind === 'source') : [this.#find(source, 'source')];
    this.#enqueue(async () => {
      for (const node of sources) await this.#watermark(node, watermark);
    });
    await this.#settle();
  }

  /**
   * Moves processing time forward by `milliseconds`, firing every processing-time timer and window
   * that falls due, in time order, and async I/O's timeouts and retries.
   */
  async advanceProcessingTime(milliseconds: number): Promise<void> {
    const target = this.#clock.now + milliseconds;
    for (;;) {
      let due: number | undefined;
      for (const node of this.#nodes) {
        for (const time of node.timerRequests) if (time <= target && (due === undefined || time < due)) due = time;
        const next = node.asyncTimers?.nextDue;
        if (next !== undefined && next <= target && (due === undefined || next < due)) due = next;
      }
      if (due === undefined) break;
      this.#clock.now = Math.max(this.#clock.now, due);
      const now = this.#clock.now;
      for (const node of this.#nodes) {
        // Async timeouts and retries fire at once, as real timers do; the operators' callbacks run on the job's loop.
        node.asyncTimers?.fire(now);
        let called = false;
        for (const time of [...node.timerRequests]) {
          if (time > now) continue;
          node.timerRequests.delete(time);
          called = true;
        }
        if (called) this.#enqueue(() => node.call(this.#output, (operator) => operator.onProcessingTime(now)));
      }
      await this.#settle();
    }
    this.#clock.now = target;
  }

  /** Every input ends (a bounded job's end): event time goes to its end, so every window fires, and each operator emits what it holds. */
  async endInput(): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    const sources = this.#nodes.filter((node) => node.node.kind === 'source');
    this.#enqueue(async () => {
      for (const node of sources) await this.#watermark(node, Number.POSITIVE_INFINITY);
    });
    for (const node of this.#nodes) {
      if (node.operator !== undefined) this.#enqueue(() => node.call(this.#output, (operator) => operator.endInput()));
    }
    await this.#settle();
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
    if (this.#queued > 0) {
      const full = this.#nodes
        .flatMap((node) => (node.operator instanceof AsyncWaitOperator ? [`"${node.uid}" (${node.operator.inFlight} in flight)`] : []))
        .join(', ');
      throw new WeirError('INVALID_CONFIG', `snapshot(): the job is still busy with input it was given: async I/O ${full} waits on driver time`, {
        hint: "move processing time past the calls' timeouts or retry delays first (advanceProcessingTime), so the input held back goes through",
      });
    }
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
    mail: (action) => this.#enqueue(action),
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

  /** Puts work on the job's loop, after what is there. */
  #enqueue(action: () => Promise<void>): void {
    this.#queued++;
    this.#loop = this.#loop.then(action).then(
      () => this.#done(undefined),
      (error: unknown) => this.#done({ error }),
    );
  }

  #done(failure: { error: unknown } | undefined): void {
    this.#queued--;
    this.#finished++;
    this.#failure ??= failure;
  }

  /**
   * Waits until the job's loop has run its work and async calls in flight have answered, or until
   * what is left waits on driver time: nothing moved in a turn of the event loop, and no call is
   * left that may still answer (one is while the event loop holds more than before the job opened:
   * a timer, a socket or a request its answer may come from; it is waited for up to its timeout in
   * real time without a move, then left to the driver's clock). Throws the first error of the work.
   */
  async #settle(): Promise<void> {
    let moved = this.#progress();
    let quietSince = performance.now();
    const patience = Math.max(0, ...this.#asyncOperators.map((operator) => operator.timeoutMs));
    while (this.#failure === undefined && (this.#queued > 0 || this.#awaitingAnswers())) {
      await new Promise((resolve) => setImmediate(resolve));
      const progress = this.#progress();
      if (progress !== moved) {
        moved = progress;
        quietSince = performance.now();
        continue;
      }
      // Nothing moved in a whole turn: what is left waits on driver time, unless a call may still answer.
      if (!this.#awaitingAnswers() || !eventLoopBusierThan(this.#baseline) || performance.now() - quietSince > patience) break;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const failure = this.#failure;
    this.#failure = undefined;
    if (failure !== undefined) throw failure.error;
  }

  #awaitingAnswers(): boolean {
    return this.#asyncOperators.some((operator) => operator.awaitingAnswers > 0);
  }

  /** Changes whenever the job moves: work on its loop finishes, or an async call answers. */
  #progress(): string {
    let awaiting = 0;
    for (const operator of this.#asyncOperators) awaiting += operator.awaitingAnswers;
    return `${this.#finished}/${this.#queued}/${awaiting}`;
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
