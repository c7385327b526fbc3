import type { OperatorSubtaskState } from '../../checkpoint/operator-subtask-state.ts';
import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import type { Source, SourceBatch, SourceReader } from '../../core/connector/source.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { ListState } from '../../core/state/state-types.ts';
import type { JobVertex } from '../../graph/job-graph.ts';
import type { StreamGraph } from '../../graph/stream-graph.ts';
import { HeapKeyedStateBackend } from '../../state/heap-keyed-state-backend.ts';
import { keyGroupRangeIntersection, keyGroupRangeSize } from '../../state/key-group-range.ts';
import { computeKeyGroupRangeForOperatorIndex } from '../../state/key-group-range-assignment.ts';
import { OperatorStateBackend } from '../../state/operator-state-backend.ts';
import type { FromWorker, RestoreInfo } from '../deployment/worker-messages.ts';
import type { ChannelMessage } from '../io/channel-message.ts';
import type { RecordWriter } from '../io/record-writer.ts';
import { TaskMetrics } from '../metrics/task-metrics.ts';
import { SourceWatermarks } from '../watermarks/source-watermarks.ts';
import { StatusWatermarkValve, type WatermarkEvent } from '../watermarks/status-watermark-valve.ts';

/** Everything a task needs from the worker that hosts it. */
export interface TaskEnvironment {
  jobName: string;
  config: EnvironmentConfig;
  vertex: JobVertex;
  subtaskIndex: number;
  attemptNumber: number;
  /** This task's own copy of the job's graph (its own function instances). */
  streamGraph: StreamGraph;
  /** uid of every stream node, by id. */
  uids: string[];
  restore: RestoreInfo | undefined;
  storage: CheckpointStorage | undefined;
  inputChannels: number[];
  /** Which input (0 or 1) of the head operator each input channel feeds; channels not listed feed input 0. */
  inputIndexOf?: ReadonlyMap<number, number>;
  /** Every output edge: the main output's, and side outputs' (RecordWriter.outputTag). */
  recordWriters: RecordWriter[];
  returnCredit: (channelId: number) => void;
  toMaster: (message: FromWorker) => void;
}

interface ChainedOperator {
  uid: string;
  name: string;
  operator: StreamOperator<unknown, unknown>;
  keyed: HeapKeyedStateBackend | undefined;
  operatorState: OperatorStateBackend;
}

interface SourceState {
  node: ChainedOperator;
  source: Source<unknown>;
  reader: SourceReader<unknown>;
  splits: ListState<unknown>;
  allSplits: ListState<unknown>;
  finished: boolean;
  /** Timestamps and watermarks, when the source has a watermark strategy. */
  watermarks: SourceWatermarks | undefined;
}

/** Side-output records of the chain's last operator, gathered during one call, by output tag. */
interface SideOutputBuffer {
  records: unknown[];
  timestamps: number[];
  writers: RecordWriter[];
}

interface Alignment {
  location: CheckpointLocation;
  received: Set<number>;
  startedAt: number;
}

interface StateSnapshot {
  uid: string;
  keyed: Uint8Array | undefined;
  operator: Uint8Array | undefined;
}

type Mail =
  | { k: 'data'; c: number; d: unknown[]; t: number[] | undefined }
  | { k: 'barrier'; c: number; location: CheckpointLocation }
  | { k: 'watermark'; c: number; w: number }
  | { k: 'status'; c: number; idle: boolean }
  | { k: 'end'; c: number };

type Control =
  | { k: 'trigger'; location: CheckpointLocation; stop: StopMode | undefined }
  | { k: 'complete'; id: number }
  | { k: 'abort'; id: number }
  | { k: 'timer'; operator: number };

const SPLITS_STATE = 'source-splits';
const ALL_SPLITS_STATE = 'source-all-splits';
const isThenable = (value: unknown): value is PromiseLike<unknown> => typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
/** The timestamps an operator set for what its last call returned (a function, so the type checker does not assume the `undefined` the task wrote before the call). */
const timestampsOf = (operator: StreamOperator<unknown, unknown>): number[] | undefined => operator.outputTimestamps;

/**
 * One subtask of a vertex: its chain of operators, its input channels and its outputs (Flink's
 * StreamTask with a mailbox). A single loop takes control messages (checkpoint triggers and
 * notifications, timers) first, then input, and stops taking input while any output channel has
 * no credit. Barriers are aligned in exactly-once mode: a channel that delivered barrier N is
 * blocked until every channel has, then the operators snapshot, the barrier goes downstream, and
 * the state is written and acknowledged while records flow again.
 *
 * Event time: watermarks and watermark statuses arrive on the channels in order with records and
 * barriers (a blocked channel holds them back too). The task's watermark is the minimum over its
 * channels, idle ones left out (StatusWatermarkValve); when it rises, each operator of the chain
 * fires its event-time timers in turn and the watermark goes downstream. A source task makes its
 * watermark from its watermark strategy, per split (SourceWatermarks). Watermarks are not
 * checkpointed: after a restore they start again from -Infinity, and restored event-time timers
 * fire once the new watermarks pass them (as in Flink).
 */
export class StreamTask {
  readonly env: TaskEnvironment;
  readonly name: string;
  readonly #chain: ChainedOperator[] = [];
  #source: SourceState | undefined;
  /** Records in and out, back pressure, busy time and the operators' own metrics. */
  readonly metrics = new TaskMetrics();

  readonly #mailbox: Mail[] = [];
  readonly #control: Control[] = [];
  readonly #blocked = new Set<number>();
  #blockedMail: Mail[] = [];
  #aligning: Alignment | undefined;
  readonly #tracking = new Map<number, Alignment>();
  #lastTracked = 0;
  readonly #ended = new Set<number>();
  #endOfData = false;
  #draining = false;
  #failed = false;
  #closed = false;
  /** A stopping savepoint this source task took: it reads nothing more unless that savepoint is aborted. */
  #stopping: { checkpointId: number; mode: StopMode } | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  /** The minimum watermark over the input channels; undefined for a source task. */
  readonly #valve: StatusWatermarkValve | undefined;
  /** Channel id -> its index in the valve. */
  readonly #channelIndex = new Map<number, number>();
  /** Watermark events the valve or the source watermarks produced, to emit in order. */
  #watermarkEvents: WatermarkEvent[] = [];
  /** Whether this task last told its outputs it is idle. */
  #outputIdle = false;
  /** The watermark the chain has been advanced to. */
  #currentWatermark = Number.NEGATIVE_INFINITY;
  /** The writers of the main output (the chain end's records). */
  readonly #mainWriters: RecordWriter[];
  /** Side-output buffers of the chain's last operator, by output tag (only tags some edge reads). */
  readonly #sideOutputs = new Map<string, SideOutputBuffer>();
  #sideOutputPending = false;
  /** The one processing-time callback each operator has asked for: the earliest time it needs. */
  readonly #timerRequests = new Map<number, { at: number; handle: NodeJS.Timeout }>();

  constructor(env: TaskEnvironment) {
    this.env = env;
    this.name = `${env.vertex.name} (${env.subtaskIndex + 1}/${env.vertex.parallelism})`;
    env.inputChannels.forEach((channel, index) => {
      this.#channelIndex.set(channel, index);
    });
    this.#valve = env.inputChannels.length > 0 ? new StatusWatermarkValve(env.inputChannels.length) : undefined;
    this.#mainWriters = env.recordWriters.filter((writer) => writer.outputTag === undefined);
    for (const writer of env.recordWriters) {
      if (writer.outputTag === undefined) continue;
      const buffer = this.#sideOutputs.get(writer.outputTag);
      if (buffer === undefined) this.#sideOutputs.set(writer.outputTag, { records: [], timestamps: [], writers: [writer] });
      else buffer.writers.push(writer);
    }
  }

  /** Creates the chain's operators and restores their state. */
  async open(): Promise<void> {
    const { env } = this;
    const { vertex, subtaskIndex, config } = env;
    for (const [position, nodeId] of vertex.nodeIds.entries()) {
      const node = env.streamGraph.node(nodeId);
      const uid = env.uids[nodeId] as string;
      const keyed = position === 0 && vertex.keyed ? await this.#restoreKeyed(uid, node.name) : undefined;
      const operatorState = await this.#restoreOperatorState(uid);
      if (node.kind === 'source') {
        const strategy = node.watermarkStrategy?.hasWatermarks ? node.watermarkStrategy : undefined;
        const splitId = node.source.splitId?.bind(node.source);
        const reader = node.source.createReader({
          subtaskIndex,
          parallelism: vertex.parallelism,
          attemptNumber: env.attemptNumber,
          tracksSplits: strategy !== undefined && splitId !== undefined,
        });
        const splits = operatorState.getListState<unknown>(SPLITS_STATE);
        // Every subtask's splits, as union state: a source can tell a new split from one another subtask reads.
        const allSplits = operatorState.getUnionListState<unknown>(ALL_SPLITS_STATE);
        if (!this.#restoredUids().has(uid)) {
          const initial = await node.source.createInitialSplits(vertex.parallelism);
          splits.update(initial.filter((_split, index) => index % vertex.parallelism === subtaskIndex));
          allSplits.update(initial);
        }
        const chained: ChainedOperator = { uid, name: node.name, operator: undefined as never, keyed, operatorState };
        const watermarks =
          strategy === undefined
            ? undefined
            : new SourceWatermarks({
                strategy: strategy as never,
                sourceName: node.name,
                splitIds: splitId === undefined ? undefined : splits.get().map((split) => splitId(split)),
                now: Date.now(),
              });
        watermarks?.start(this.#watermarkEvents); // a subtask without splits is idle from the start
        this.#source = { node: chained, source: node.source, reader, splits, allSplits, finished: false, watermarks };
        const opened = reader.open(splits.get(), allSplits.get());
        if (isThenable(opened)) await opened;
        continue;
      }
      const operator = node.kind === 'sink' ? node.sink.createOperator() : node.createOperator();
      const chained: ChainedOperator = { uid, name: node.name, operator: operator as StreamOperator<unknown, unknown>, keyed, operatorState };
      this.#chain.push(chained);
      const index = this.#chain.length - 1;
      const context: OperatorContext = {
        jobName: env.jobName,
        operatorName: node.name,
        uid,
        subtaskIndex,
        parallelism: vertex.parallelism,
        maxParallelism: config.maxParallelism,
        attemptNumber: env.attemptNumber,
        restoredCheckpointId: env.restore?.checkpointId,
        restoredTransactionsCommitted: env.restore?.transactionsCommitted ?? false,
        checkpointingMode: config.checkpointing?.mode ?? 'off',
        keyedState: keyed,
        operatorState,
        metrics: this.metrics.group(uid),
        requestProcessingTimeCallback: (timestamp) => this.#requestTimer(index, timestamp),
        output: (tag, record, timestamp) => this.#sideOutput(index, tag, record, timestamp),
      };
      const opened = chained.operator.open(context);
      if (isThenable(opened)) await opened;
    }
  }

  /** Starts a source's loop (other tasks run when input arrives). */
  start(): void {
    this.#schedule();
  }

  // --- input from the worker -------------------------------------------------------------

  deliver(message: ChannelMessage): void {
    switch (message.kind) {
      case 'records':
        this.#mailbox.push({ k: 'data', c: message.channel, d: message.records, t: message.timestamps });
        break;
      case 'watermark':
        this.#mailbox.push({ k: 'watermark', c: message.channel, w: message.watermark });
        break;
      case 'barrier':
        this.#mailbox.push({ k: 'barrier', c: message.channel, location: message.location });
        break;
      case 'watermark-status':
        this.#mailbox.push({ k: 'status', c: message.channel, idle: message.idle });
        break;
      case 'end-of-data':
        this.#mailbox.push({ k: 'end', c: message.channel });
        break;
    }
    this.#schedule();
  }

  triggerCheckpoint(location: CheckpointLocation, stop?: StopMode): void {
    this.#control.push({ k: 'trigger', location, stop });
    this.#schedule();
  }

  notifyCheckpointComplete(id: number): void {
    this.#control.push({ k: 'complete', id });
    this.#schedule();
  }

  notifyCheckpointAborted(id: number): void {
    this.#control.push({ k: 'abort', id });
    this.#schedule();
  }

  /** Output credit came back. */
  onCredit(): void {
    if (this.#outputsAvailable()) this.metrics.relieved(Date.now());
    this.#schedule();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    for (const request of this.#timerRequests.values()) clearTimeout(request.handle);
    this.#timerRequests.clear();
    for (const chained of this.#chain) {
      const closed = chained.operator.close();
      if (isThenable(closed)) await closed;
    }
    if (this.#source) {
      const closed = this.#source.reader.close();
      if (isThenable(closed)) await closed;
    }
  }

  // --- the mailbox loop ------------------------------------------------------------------

  #schedule(): void {
    if (this.#draining || this.#failed || this.#closed) return;
    this.#draining = true;
    setImmediate(() => {
      this.#drain().catch((error: unknown) => this.#fail(error));
    });
  }

  async #drain(): Promise<void> {
    let steps = 0;
    let idleMs = 0;
    const started = performance.now();
    try {
      while (!this.#failed && !this.#closed) {
        const control = this.#control.shift();
        if (control !== undefined) {
          await this.#handleControl(control);
          continue;
        }
        if (!this.#outputsAvailable()) {
          this.metrics.backPressured(Date.now());
          return; // resumed by onCredit
        }
        if (this.#source !== undefined) {
          if (this.#source.finished || this.#stopping !== undefined) return;
          const polledAt = performance.now();
          const produced = await this.#pollSource();
          if (!produced) {
            idleMs += performance.now() - polledAt; // waiting on an empty source is not busy
            this.#idleTimer = setTimeout(() => this.#schedule(), 2);
            return;
          }
          if (++steps >= 4) break; // let channel messages in
          continue;
        }
        const mail = this.#mailbox.shift();
        if (mail === undefined) return;
        await this.#handleMail(mail);
        if (++steps >= 64) break;
      }
    } finally {
      this.#draining = false;
      this.metrics.busyMs += performance.now() - started - idleMs;
    }
    if (!this.#failed && !this.#closed) this.#schedule();
  }

  #outputsAvailable(): boolean {
    for (const writer of this.env.recordWriters) if (!writer.available) return false;
    return true;
  }

  async #handleMail(mail: Mail): Promise<void> {
    if (this.#blocked.has(mail.c)) {
      this.#blockedMail.push(mail);
      return;
    }
    switch (mail.k) {
      case 'data':
        this.metrics.recordsIn += mail.d.length;
        await this.#processAndEmit(mail.d, mail.t, 0, (this.env.inputIndexOf?.get(mail.c) ?? 0) === 1);
        this.env.returnCredit(mail.c);
        return;
      case 'watermark':
        (this.#valve as StatusWatermarkValve).inputWatermark(this.#channelIndex.get(mail.c) as number, mail.w, this.#watermarkEvents);
        await this.#emitWatermarkEvents();
        return;
      case 'status':
        (this.#valve as StatusWatermarkValve).inputWatermarkStatus(this.#channelIndex.get(mail.c) as number, mail.idle, this.#watermarkEvents);
        await this.#emitWatermarkEvents();
        return;
      case 'barrier':
        await this.#onBarrier(mail.c, mail.location);
        return;
      case 'end':
        this.#ended.add(mail.c);
        (this.#valve as StatusWatermarkValve).endOfInput(this.#channelIndex.get(mail.c) as number, this.#watermarkEvents);
        await this.#emitWatermarkEvents();
        if (this.#ended.size === this.env.inputChannels.length) await this.#endInput();
        return;
    }
  }

  async #handleControl(control: Control): Promise<void> {
    switch (control.k) {
      case 'trigger': {
        const source = this.#source;
        if (source === undefined) return;
        // Stop with drain: the end of event time goes out before the barrier, so every window and
        // event-time timer downstream fires and its output is part of this savepoint.
        if (control.stop === 'drain') await this.#advanceWatermark(Number.POSITIVE_INFINITY);
        const splits = source.reader.snapshotState(control.location.checkpointId);
        source.splits.update(splits);
        source.allSplits.update(splits);
        await this.#performCheckpoint(control.location, 0);
        // A stopping savepoint: nothing is read after its barrier, until it completes (the job
        // stops) or is aborted (reading resumes; after a drain the job restarts instead).
        if (control.stop !== undefined) this.#stopping = { checkpointId: control.location.checkpointId, mode: control.stop };
        return;
      }
      case 'complete': {
        for (const chained of this.#chain) {
          const done = chained.operator.notifyCheckpointComplete(control.id);
          if (isThenable(done)) await done;
        }
        const notified = this.#source?.reader.notifyCheckpointComplete?.(control.id);
        if (isThenable(notified)) await notified;
        this.env.toMaster({ type: 'notified', checkpointId: control.id, vertexId: this.env.vertex.id, subtaskIndex: this.env.subtaskIndex });
        return;
      }
      case 'abort': {
        for (const chained of this.#chain) {
          const done = chained.operator.notifyCheckpointAborted(control.id);
          if (isThenable(done)) await done;
        }
        if (this.#stopping?.checkpointId === control.id) {
          if (this.#stopping.mode === 'drain') {
            // The end-of-event-time watermark is out and cannot be taken back: start again from the latest checkpoint.
            throw new WeirError('STOP_FAILED', `stop with drain failed: savepoint ${control.id} was aborted after the end of event time was sent`, {
              hint: 'the job restarts from its latest checkpoint; try the stop again',
              fault: 'external',
            });
          }
          this.#stopping = undefined; // the stop failed: read on
        }
        return;
      }
      case 'timer': {
        this.#timerRequests.delete(control.operator);
        const operator = (this.#chain[control.operator] as ChainedOperator).operator;
        operator.outputTimestamps = undefined;
        let out = operator.onProcessingTime(Date.now());
        if (isThenable(out)) out = await out;
        await this.#afterCall(control.operator, out, timestampsOf(operator));
        return;
      }
    }
  }

  /**
   * Runs a batch (with its records' timestamps, if any) through the chain from operator `from` on,
   * and emits what comes out of its end. `secondInput`: the batch is for input 2 of the head.
   */
  async #processAndEmit(batch: unknown[], timestamps: number[] | undefined, from: number, secondInput = false): Promise<void> {
    let current = batch;
    let stamps = timestamps;
    const chain = this.#chain;
    for (let i = from; i < chain.length && current.length > 0; i++) {
      const operator = (chain[i] as ChainedOperator).operator;
      operator.outputTimestamps = undefined;
      const out = secondInput && i === from ? operator.processBatch2(current, stamps) : operator.processBatch(current, stamps);
      current = isThenable(out) ? await out : out;
      stamps = timestampsOf(operator);
      if (stamps !== undefined && stamps.length !== current.length) throw this.#timestampMismatch(i, current.length, stamps.length);
      if (this.#sideOutputPending) this.#flushSideOutputs();
    }
    if (current.length > 0 && this.#mainWriters.length > 0) {
      this.metrics.recordsOut += current.length;
      for (const writer of this.#mainWriters) writer.emit(current, stamps);
    }
  }

  /** What an operator's call (timer, watermark, end of input) returned goes on down the chain. */
  async #afterCall(index: number, out: unknown[], timestamps: number[] | undefined): Promise<void> {
    if (timestamps !== undefined && timestamps.length !== out.length) throw this.#timestampMismatch(index, out.length, timestamps.length);
    if (this.#sideOutputPending) this.#flushSideOutputs();
    if (out.length > 0) await this.#processAndEmit(out, timestamps, index + 1);
  }

  #timestampMismatch(index: number, records: number, timestamps: number): WeirError {
    return new WeirError(
      'TIMESTAMP_MISMATCH',
      `operator "${(this.#chain[index] as ChainedOperator).name}" returned ${records} records with ${timestamps} timestamps`,
      { fault: 'internal', hint: 'an operator that sets outputTimestamps must give one per record it returns' },
    );
  }

  async #pollSource(): Promise<boolean> {
    const source = this.#source as SourceState;
    const watermarks = source.watermarks;
    if (this.#watermarkEvents.length > 0) await this.#emitWatermarkEvents();
    const reader = source.reader;
    let polled: unknown[] | SourceBatch<unknown> | null | Promise<unknown[] | SourceBatch<unknown> | null>;
    if (watermarks !== undefined && reader.pollNextBatch !== undefined) polled = reader.pollNextBatch(this.env.config.batchSize);
    else polled = reader.pollNext(this.env.config.batchSize);
    if (isThenable(polled)) polled = await polled;
    if (polled === null) {
      source.finished = true;
      await this.#endInput();
      return false;
    }
    const records = Array.isArray(polled) ? polled : polled.records;
    if (watermarks === undefined) {
      if (records.length === 0) return false;
      this.metrics.recordsIn += records.length;
      await this.#processAndEmit(records, undefined, 0);
      return true;
    }
    if (records.length > 0) {
      const batch = Array.isArray(polled) ? undefined : polled;
      const timestamps = watermarks.assign(records, batch?.timestamps, batch?.splitIds, this.#watermarkEvents);
      if (this.#watermarkEvents.length > 0) await this.#emitWatermarkEvents(); // an idle split's ACTIVE goes before its records
      this.metrics.recordsIn += records.length;
      await this.#processAndEmit(records, timestamps, 0);
    }
    const finished = Array.isArray(polled) ? undefined : polled.finishedSplitIds;
    if (finished !== undefined && finished.length > 0) watermarks.releaseSplits(finished, this.#watermarkEvents);
    watermarks.onProcessingTime(Date.now(), this.#watermarkEvents);
    if (this.#watermarkEvents.length > 0) await this.#emitWatermarkEvents();
    return records.length > 0;
  }

  // --- watermarks and side outputs -------------------------------------------------------

  /** Emits what the valve or the source's watermarks produced: statuses downstream, watermarks through the chain and downstream. */
  async #emitWatermarkEvents(): Promise<void> {
    const events = this.#watermarkEvents;
    if (events.length === 0) return;
    this.#watermarkEvents = [];
    for (const event of events) {
      if (event.kind === 'watermark') await this.#advanceWatermark(event.watermark);
      else this.#broadcastStatus(event.kind === 'idle');
    }
  }

  /**
   * Event time reached `watermark`: each operator of the chain in turn fires its event-time timers
   * (what they emit goes through the rest of the chain first), then the watermark goes downstream.
   */
  #broadcastStatus(idle: boolean): void {
    if (idle === this.#outputIdle) return;
    this.#outputIdle = idle;
    for (const writer of this.env.recordWriters) writer.broadcastWatermarkStatus(idle);
  }

  async #advanceWatermark(watermark: number): Promise<void> {
    if (watermark <= this.#currentWatermark) return;
    // Downstream valves ignore watermarks from an idle channel (a drain's end of event time after
    // the input went quiet, say): announce the output active first, as Flink does.
    if (this.#outputIdle) this.#broadcastStatus(false);
    this.#currentWatermark = watermark;
    this.metrics.watermark = watermark;
    const chain = this.#chain;
    for (let i = 0; i < chain.length; i++) {
      const operator = (chain[i] as ChainedOperator).operator;
      operator.outputTimestamps = undefined;
      let out = operator.processWatermark(watermark);
      if (isThenable(out)) out = await out;
      await this.#afterCall(i, out, timestampsOf(operator));
    }
    for (const writer of this.env.recordWriters) writer.broadcastWatermark(watermark);
  }

  #sideOutput(index: number, tag: string, record: unknown, timestamp: number): boolean {
    // Only the chain's last operator can have side-output edges (a node with one does not chain on).
    if (index !== this.#chain.length - 1) return false;
    const buffer = this.#sideOutputs.get(tag);
    if (buffer === undefined) return false; // no stream reads this tag
    buffer.records.push(record);
    buffer.timestamps.push(timestamp);
    this.#sideOutputPending = true;
    return true;
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

  // --- barriers and snapshots ------------------------------------------------------------

  async #onBarrier(channel: number, location: CheckpointLocation): Promise<void> {
    if (this.env.config.checkpointing?.mode === 'at-least-once') {
      await this.#trackBarrier(channel, location);
      return;
    }
    // Exactly-once (Flink's aligned barrier handler): a channel that delivered barrier N is blocked
    // until every channel has; channels deliver barriers in order, so N completes before N + 1.
    const id = location.checkpointId;
    const aligning = this.#aligning;
    if (aligning !== undefined && id < aligning.location.checkpointId) return; // a barrier of an abandoned checkpoint
    if (aligning === undefined || id > aligning.location.checkpointId) {
      if (aligning !== undefined) this.#unblockAll(); // the older checkpoint was abandoned upstream
      this.#aligning = { location, received: new Set([channel]), startedAt: Date.now() };
    } else {
      aligning.received.add(channel);
    }
    const current = this.#aligning as Alignment;
    if (current.received.size < this.env.inputChannels.length) {
      this.#blocked.add(channel);
      return;
    }
    this.#aligning = undefined;
    await this.#performCheckpoint(location, Date.now() - current.startedAt);
    this.#unblockAll();
  }

  /**
   * At-least-once (Flink's barrier tracker): nothing is blocked, so channels may be at different
   * checkpoints; each checkpoint counts its own barriers and is taken when all have arrived, which
   * makes every older one still counting moot.
   */
  async #trackBarrier(channel: number, location: CheckpointLocation): Promise<void> {
    const id = location.checkpointId;
    if (id <= this.#lastTracked) return;
    let tracked = this.#tracking.get(id);
    if (tracked === undefined) {
      tracked = { location, received: new Set(), startedAt: Date.now() };
      this.#tracking.set(id, tracked);
    }
    tracked.received.add(channel);
    if (tracked.received.size < this.env.inputChannels.length) return;
    for (const older of this.#tracking.keys()) if (older <= id) this.#tracking.delete(older);
    this.#lastTracked = id;
    await this.#performCheckpoint(location, 0);
  }

  #unblockAll(): void {
    this.#blocked.clear();
    if (this.#blockedMail.length > 0) {
      this.#mailbox.unshift(...this.#blockedMail);
      this.#blockedMail = [];
    }
  }

  async #performCheckpoint(location: CheckpointLocation, alignmentMs: number): Promise<void> {
    const id = location.checkpointId;
    const snapshots: StateSnapshot[] = [];
    try {
      for (const chained of this.#chain) {
        const done = chained.operator.snapshotState(id);
        if (isThenable(done)) await done;
      }
      const all = this.#source === undefined ? this.#chain : [this.#source.node, ...this.#chain];
      for (const chained of all) {
        snapshots.push({
          uid: chained.uid,
          keyed: chained.keyed === undefined || chained.keyed.isEmpty() ? undefined : chained.keyed.snapshot(),
          operator: chained.operatorState.stateNames().length === 0 ? undefined : chained.operatorState.snapshot(),
        });
      }
    } catch (error) {
      this.#decline(id, error);
      for (const writer of this.env.recordWriters) writer.broadcastBarrier(location);
      return;
    }
    for (const writer of this.env.recordWriters) writer.broadcastBarrier(location);
    // The asynchronous part: write the state files while records flow again.
    this.#writeAndAcknowledge(location, snapshots, alignmentMs).catch((error: unknown) => this.#decline(id, error));
  }

  #decline(checkpointId: number, error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.env.toMaster({ type: 'decline', checkpointId, vertexId: this.env.vertex.id, subtaskIndex: this.env.subtaskIndex, reason });
  }

  async #writeAndAcknowledge(location: CheckpointLocation, snapshots: StateSnapshot[], alignmentMs: number): Promise<void> {
    const { env } = this;
    const storage = env.storage;
    if (storage === undefined) throw new WeirError('NO_CHECKPOINT_STORAGE', 'checkpointing has no storage folder', { fault: 'internal' });
    const operators: OperatorSubtaskState[] = [];
    let bytes = 0;
    for (const snapshot of snapshots) {
      const ack: OperatorSubtaskState = { uid: snapshot.uid };
      if (snapshot.keyed !== undefined) {
        ack.keyed = await storage.writeState(location, snapshot.uid, env.subtaskIndex, 'keyed', snapshot.keyed);
        bytes += snapshot.keyed.byteLength;
      }
      if (snapshot.operator !== undefined) {
        ack.operator = await storage.writeState(location, snapshot.uid, env.subtaskIndex, 'operator', snapshot.operator);
        bytes += snapshot.operator.byteLength;
      }
      operators.push(ack);
    }
    env.toMaster({ type: 'ack', checkpointId: location.checkpointId, vertexId: env.vertex.id, subtaskIndex: env.subtaskIndex, operators, alignmentMs, bytes });
  }

  async #endInput(): Promise<void> {
    if (this.#endOfData) return;
    this.#endOfData = true;
    // The end of event time (Flink's MAX_WATERMARK at the end of input): every event-time timer and window fires.
    await this.#advanceWatermark(Number.POSITIVE_INFINITY);
    for (let i = 0; i < this.#chain.length; i++) {
      const operator = (this.#chain[i] as ChainedOperator).operator;
      operator.outputTimestamps = undefined;
      let out = operator.endInput();
      if (isThenable(out)) out = await out;
      await this.#afterCall(i, out, timestampsOf(operator));
    }
    for (const writer of this.env.recordWriters) writer.broadcastEndOfData();
    this.env.toMaster({ type: 'endOfData', vertexId: this.env.vertex.id, subtaskIndex: this.env.subtaskIndex });
  }

  // --- timers ------------------------------------------------------------------------------

  #requestTimer(operator: number, timestamp: number): void {
    const requested = this.#timerRequests.get(operator);
    if (requested !== undefined) {
      if (requested.at <= timestamp) return;
      clearTimeout(requested.handle);
    }
    const handle = setTimeout(
      () => {
        this.#control.push({ k: 'timer', operator });
        this.#schedule();
      },
      Math.max(0, timestamp - Date.now()),
    );
    this.#timerRequests.set(operator, { at: timestamp, handle });
  }

  // --- failure and restore -----------------------------------------------------------------

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    const weirError =
      error instanceof WeirError
        ? error
        : new WeirError('TASK_FAILED', `${this.name} failed: ${error instanceof Error ? error.message : String(error)}`, { fault: 'user', cause: error });
    if (error instanceof Error && !(error instanceof WeirError) && error.stack) weirError.stack = error.stack;
    this.env.toMaster({ type: 'failed', vertexName: this.env.vertex.name, subtaskIndex: this.env.subtaskIndex, error: weirError.serialize() });
  }

  #restoredUids(): Set<string> {
    return new Set(this.env.restore?.operators.map((operator) => operator.uid) ?? []);
  }

  async #restoreKeyed(uid: string, operatorName: string): Promise<HeapKeyedStateBackend> {
    const { config, vertex, subtaskIndex, restore, storage } = this.env;
    const range = computeKeyGroupRangeForOperatorIndex(config.maxParallelism, vertex.parallelism, subtaskIndex);
    const backend = new HeapKeyedStateBackend({ maxParallelism: config.maxParallelism, keyGroupRange: range, operatorName });
    const restored = restore?.operators.find((operator) => operator.uid === uid);
    if (restore === undefined || restored === undefined || storage === undefined) return backend;
    const snapshots: Uint8Array[] = [];
    for (const subtask of restored.subtasks) {
      if (subtask.keyed === undefined) continue;
      const oldRange = computeKeyGroupRangeForOperatorIndex(restore.maxParallelism, restored.parallelism, subtask.subtaskIndex);
      if (keyGroupRangeSize(keyGroupRangeIntersection(oldRange, range)) === 0) continue;
      snapshots.push(await storage.readState(restore.folder, subtask.keyed));
    }
    backend.restore(snapshots);
    return backend;
  }

  async #restoreOperatorState(uid: string): Promise<OperatorStateBackend> {
    const { vertex, subtaskIndex, restore, storage } = this.env;
    const restored = restore?.operators.find((operator) => operator.uid === uid);
    if (restore === undefined || restored === undefined || storage === undefined) return new OperatorStateBackend();
    const snapshots: Uint8Array[] = [];
    for (const subtask of [...restored.subtasks].sort((a, b) => a.subtaskIndex - b.subtaskIndex)) {
      if (subtask.operator !== undefined) snapshots.push(await storage.readState(restore.folder, subtask.operator));
    }
    return OperatorStateBackend.restoreFor(snapshots, vertex.parallelism, subtaskIndex);
  }
}
