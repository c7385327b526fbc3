import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { KeySelector } from '../../core/functions/key-selector.ts';
import type { KeyedCoProcessFunction } from '../../core/functions/process-functions.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import type { KeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import type { KeyLike, StateKey } from '../../core/state/state-key.ts';
import { KeyedProcessContext, keyedRuntimeContext, processKeyedBatch, requireKeyedState, type TimerFunction } from './keyed-process-operator.ts';
import { RecordErrorHandler } from './record-error-handler.ts';
import type { TimestampedCollector } from './timestamped-collector.ts';

/**
 * Runs a {@link KeyedCoProcessFunction} on two connected streams keyed by the same key (Flink's
 * KeyedCoProcessOperator): both inputs were hash-partitioned to the same key groups, so records of
 * either input with equal keys meet here and share the key's state and timers.
 */
export class KeyedCoProcessOperator<K extends KeyLike, IN1, IN2, OUT> extends StreamOperator<IN1, OUT> {
  readonly #fn: KeyedCoProcessFunction<K, IN1, IN2, OUT>;
  readonly #keySelector1: KeySelector<IN1>;
  readonly #keySelector2: KeySelector<IN2>;
  #backend!: KeyedStateBackend;
  #name = '';
  readonly #context = new KeyedProcessContext<K>();
  readonly #errors: RecordErrorHandler;

  constructor(
    fn: KeyedCoProcessFunction<K, IN1, IN2, OUT>,
    keySelector1: KeySelector<IN1>,
    keySelector2: KeySelector<IN2>,
    onError: RecordErrorPolicy = 'fail',
  ) {
    super();
    this.#fn = fn;
    this.#keySelector1 = keySelector1;
    this.#keySelector2 = keySelector2;
    this.#errors = new RecordErrorHandler(onError);
  }

  override open(context: OperatorContext): void {
    this.#errors.open(context);
    this.#backend = requireKeyedState(context, 'connect(...).keyBy(...).process(...)');
    this.#name = context.operatorName;
    this.#fn.open?.(keyedRuntimeContext(context, this.#backend));
    this.#context.open(context, this.#backend, this.#errors);
  }

  processBatch(batch: IN1[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    return this.#process(batch, timestamps, this.#keySelector1, (value, context, out) => fn.processElement1(value, context, out));
  }

  override processBatch2(batch: unknown[], timestamps?: readonly number[]): OUT[] {
    const fn = this.#fn;
    return this.#process(batch as IN2[], timestamps, this.#keySelector2, (value, context, out) => fn.processElement2(value, context, out));
  }

  #process<T>(
    batch: T[],
    timestamps: readonly number[] | undefined,
    select: KeySelector<T>,
    call: (value: T, context: KeyedProcessContext<K>, out: TimestampedCollector<OUT>) => void,
  ): OUT[] {
    const context = this.#context;
    const out = context.collector as TimestampedCollector<OUT>;
    const collector = processKeyedBatch(batch, timestamps, { backend: this.#backend, select, operatorName: this.#name }, context, this.#errors, (value) =>
      call(value, context, out),
    );
    this.outputTimestamps = collector.timestamps;
    return collector.records as OUT[];
  }

  override processWatermark(watermark: number): OUT[] {
    const collector = this.#context.advanceWatermark(watermark, this.#fn as TimerFunction<K>);
    this.outputTimestamps = collector.timestamps;
    return collector.records as OUT[];
  }

  override onProcessingTime(now: number): OUT[] {
    return this.#context.fireProcessingTimers(now, this.#fn as TimerFunction<K>).records as OUT[];
  }

  override close(): void {
    this.#fn.close?.();
  }
}
