import type {
  BroadcastProcessFunction,
  KeyedBroadcastContext,
  KeyedBroadcastProcessFunction,
  ReadOnlyBroadcastAccess,
} from '../../core/functions/broadcast-process-functions.ts';
import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { KeySelector } from '../../core/functions/key-selector.ts';
import type { OutputTag } from '../../core/functions/output-tag.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { KeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import type { MapStateDescriptor, StateDescriptor } from '../../core/state/state-descriptors.ts';
import type { KeyLike } from '../../core/state/state-key.ts';
import { decodeKey } from '../../state/composite-key.ts';
import { BroadcastStateStore } from './broadcast-state-store.ts';
import {
  KeyedProcessContext,
  keyedRuntimeContext,
  processKeyedBatch,
  requireKeyedState,
  runtimeContext,
  type TimerFunction,
} from './keyed-process-operator.ts';
import { NonKeyedProcessContext } from './process-operator.ts';
import { RecordErrorHandler } from './record-error-handler.ts';
import type { TimestampedCollector } from './timestamped-collector.ts';

/** The broadcast side's context: the broadcast record's time, side outputs, read-write broadcast state; keyed: every key's state. */
class BroadcastSideContext<K extends KeyLike> implements KeyedBroadcastContext<K> {
  readonly #store: BroadcastStateStore;
  readonly #time: { timestamp(): number | undefined; currentWatermark(): number };
  #context!: OperatorContext;
  #backend: KeyedStateBackend | undefined;

  constructor(store: BroadcastStateStore, time: { timestamp(): number | undefined; currentWatermark(): number }) {
    this.#store = store;
    this.#time = time;
  }

  open(context: OperatorContext, backend: KeyedStateBackend | undefined): void {
    this.#context = context;
    this.#backend = backend;
  }

  timestamp(): number | undefined {
    return this.#time.timestamp();
  }

  currentProcessingTime(): number {
    return this.#context.currentProcessingTime();
  }

  currentWatermark(): number {
    return this.#time.currentWatermark();
  }

  output<X>(tag: OutputTag<X>, value: X): void {
    this.#context.output(tag.id, value, this.timestamp() ?? Number.NaN);
  }

  getBroadcastState<BK, BV>(descriptor: MapStateDescriptor<BK, BV>) {
    return this.#store.writable(descriptor);
  }

  applyToKeyedState<S>(descriptor: StateDescriptor<S>, fn: (key: K, state: S) => void): void {
    const backend = this.#backend as KeyedStateBackend;
    const state = backend.getState(descriptor);
    const previous = backend.getCurrentKey();
    for (const key of [...backend.keysOf(descriptor.name)]) {
      backend.setCurrentKey(key);
      fn(decodeKey(key) as K, state);
    }
    if (previous !== undefined) backend.setCurrentKey(previous);
  }
}

/** Runs broadcast records through `call`, each into the context's collector with its timestamp; one that throws goes to the error policy. */
function runBroadcastSide<B, OUT>(
  operator: StreamOperator<unknown, OUT>,
  batch: B[],
  timestamps: readonly number[] | undefined,
  context: { collector: TimestampedCollector<unknown>; setTimestamp(timestamp: number | undefined): void },
  errors: RecordErrorHandler,
  call: (value: B, out: TimestampedCollector<OUT>) => void,
): OUT[] {
  const collector = context.collector as TimestampedCollector<OUT>;
  collector.reset(timestamps !== undefined);
  context.setTimestamp(undefined);
  for (let i = 0; i < batch.length; i++) {
    if (timestamps !== undefined) context.setTimestamp(timestamps[i]);
    const mark = collector.records.length;
    try {
      call(batch[i] as B, collector);
    } catch (error) {
      collector.truncate(mark);
      errors.onError(error, batch[i], timestamps?.[i]);
    }
  }
  operator.outputTimestamps = collector.timestamps;
  return collector.records;
}

/**
 * Flink's CoBroadcastWithKeyedOperator: input 1 is a keyed stream (keyed state, timers, read-only
 * broadcast state), input 2 a broadcast stream (every record to every subtask, read-write
 * broadcast state, every key's state through applyToKeyedState). The broadcast state is
 * checkpointed per subtask and restored at any parallelism.
 */
export class CoBroadcastWithKeyedOperator<K extends KeyLike, IN, B, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: KeyedBroadcastProcessFunction<K, IN, B, OUT>;
  readonly #keySelector: KeySelector<IN>;
  readonly #store: BroadcastStateStore;
  readonly #context = new KeyedProcessContext<K>() as KeyedProcessContext<K> & ReadOnlyBroadcastAccess;
  readonly #broadcastSide: BroadcastSideContext<K>;
  readonly #errors: RecordErrorHandler;
  #backend!: KeyedStateBackend;
  #name = '';

  constructor(
    fn: KeyedBroadcastProcessFunction<K, IN, B, OUT>,
    keySelector: KeySelector<IN>,
    descriptors: readonly MapStateDescriptor<unknown, unknown>[],
    onError: RecordErrorPolicy = 'fail',
  ) {
    super();
    this.#fn = fn;
    this.#keySelector = keySelector;
    this.#store = new BroadcastStateStore(descriptors);
    this.#errors = new RecordErrorHandler(onError);
    const store = this.#store;
    this.#context.getBroadcastState = (descriptor) => store.readOnly(descriptor);
    const context = this.#context;
    this.#broadcastSide = new BroadcastSideContext<K>(store, { timestamp: () => context.timestamp(), currentWatermark: () => context.currentWatermark });
  }

  override open(context: OperatorContext): void {
    this.#errors.open(context);
    this.#backend = requireKeyedState(context, 'connect(broadcastStream).process(...)');
    this.#name = context.operatorName;
    this.#store.open(context);
    this.#broadcastSide.open(context, this.#backend);
    this.#fn.open?.(keyedRuntimeContext(context, this.#backend));
    this.#context.open(context, this.#backend, this.#errors);
  }

  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const context = this.#context;
    const keyed = { backend: this.#backend, select: this.#keySelector, operatorName: this.#name };
    const collector = processKeyedBatch(batch, timestamps, keyed, context, this.#errors, (value) =>
      fn.processElement(value, context, context.collector as TimestampedCollector<OUT>),
    );
    this.outputTimestamps = collector.timestamps;
    return collector.records as OUT[];
  }

  override processBatch2(batch: unknown[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const side = this.#broadcastSide;
    return runBroadcastSide(this, batch as B[], timestamps, this.#context, this.#errors, (value, out) => fn.processBroadcastElement(value, side, out));
  }

  override processWatermark(watermark: number): OUT[] {
    const collector = this.#context.advanceWatermark(watermark, this.#fn as TimerFunction<K>);
    this.outputTimestamps = collector.timestamps;
    return collector.records as OUT[];
  }

  override onProcessingTime(now: number): OUT[] {
    return this.#context.fireProcessingTimers(now, this.#fn as TimerFunction<K>).records as OUT[];
  }

  override snapshotState(_checkpointId: number): void {
    this.#store.snapshot();
  }

  override close(): void {
    this.#fn.close?.();
  }
}

/** Flink's CoBroadcastWithNonKeyedOperator: input 1 a stream that is not keyed (read-only broadcast state), input 2 the broadcast stream. */
export class CoBroadcastWithNonKeyedOperator<IN, B, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: BroadcastProcessFunction<IN, B, OUT>;
  readonly #store: BroadcastStateStore;
  readonly #context = new NonKeyedProcessContext() as NonKeyedProcessContext & ReadOnlyBroadcastAccess;
  readonly #broadcastSide: BroadcastSideContext<never>;
  readonly #errors: RecordErrorHandler;

  constructor(fn: BroadcastProcessFunction<IN, B, OUT>, descriptors: readonly MapStateDescriptor<unknown, unknown>[], onError: RecordErrorPolicy = 'fail') {
    super();
    this.#fn = fn;
    this.#store = new BroadcastStateStore(descriptors);
    this.#errors = new RecordErrorHandler(onError);
    const store = this.#store;
    this.#context.getBroadcastState = (descriptor) => store.readOnly(descriptor);
    const context = this.#context;
    this.#broadcastSide = new BroadcastSideContext<never>(store, { timestamp: () => context.timestamp(), currentWatermark: () => context.currentWatermark });
  }

  override open(context: OperatorContext): void {
    this.#context.context = context;
    this.#errors.open(context);
    this.#store.open(context);
    this.#broadcastSide.open(context, undefined);
    this.#fn.open?.(runtimeContext(context));
  }

  processBatch(batch: IN[], timestamps?: readonly number[]): OUT[] {
    const context = this.#context;
    const fn = this.#fn;
    const collector = context.collector as TimestampedCollector<OUT>;
    context.run(batch, timestamps, (value) => fn.processElement(value, context, collector), this.#errors);
    this.outputTimestamps = collector.timestamps;
    return collector.records;
  }

  override processBatch2(batch: unknown[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    const side = this.#broadcastSide;
    return runBroadcastSide(this, batch as B[], timestamps, this.#context, this.#errors, (value, out) => fn.processBroadcastElement(value, side, out));
  }

  override processWatermark(watermark: number): OUT[] {
    this.#context.currentWatermark = watermark;
    return [];
  }

  override snapshotState(_checkpointId: number): void {
    this.#store.snapshot();
  }

  override close(): void {
    this.#fn.close?.();
  }
}
