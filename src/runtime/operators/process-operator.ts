import { WeirError } from '../../core/errors/weir-error.ts';
import type { RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import type { OutputTag } from '../../core/functions/output-tag.ts';
import type { CoProcessFunction, ProcessContext, ProcessFunction, TimerService } from '../../core/functions/process-functions.ts';
import { type OperatorContext, StreamOperator } from '../../core/operator/stream-operator.ts';
import { runtimeContext } from './keyed-process-operator.ts';
import { RecordErrorHandler } from './record-error-handler.ts';
import { TimestampedCollector } from './timestamped-collector.ts';

function noTimers(context: () => OperatorContext): never {
  throw new WeirError('TIMERS_NEED_KEYED_STREAM', `operator "${context().operatorName}" set a timer, but timers exist only on keyed streams`, {
    hint: 'call keyBy(...) first and use a KeyedProcessFunction (or keyBy on both connected streams for a KeyedCoProcessFunction)',
  });
}

/** The context of process functions on streams that are not keyed: the record's timestamp, the clock, side outputs; no timers. */
export class NonKeyedProcessContext implements ProcessContext {
  readonly collector = new TimestampedCollector<unknown>();
  readonly timerService: TimerService;
  currentTimestamp: number | undefined = undefined;
  currentWatermark = Number.NEGATIVE_INFINITY;
  context!: OperatorContext;

  constructor() {
    const operatorContext = () => this.context;
    this.timerService = {
      currentProcessingTime: () => this.context.currentProcessingTime(),
      currentWatermark: () => this.currentWatermark,
      registerProcessingTimeTimer: () => noTimers(operatorContext),
      deleteProcessingTimeTimer: () => noTimers(operatorContext),
      registerEventTimeTimer: () => noTimers(operatorContext),
      deleteEventTimeTimer: () => noTimers(operatorContext),
    };
  }

  timestamp(): number | undefined {
    return this.currentTimestamp;
  }

  output<X>(tag: OutputTag<X>, value: X): void {
    this.context.output(tag.id, value, this.currentTimestamp ?? Number.NaN);
  }

  setTimestamp(timestamp: number | undefined): void {
    const none = timestamp === undefined || Number.isNaN(timestamp);
    this.currentTimestamp = none ? undefined : timestamp;
    this.collector.timestamp = none ? Number.NaN : timestamp;
  }

  /** Calls the function on every record; with `errors`, a record it throws on emits nothing (side outputs already emitted stay) and goes to the error policy. */
  run<T>(batch: T[], timestamps: readonly number[] | undefined, call: (value: T) => void, errors?: RecordErrorHandler): void {
    const collector = this.collector;
    collector.reset(timestamps !== undefined);
    this.setTimestamp(undefined);
    for (let i = 0; i < batch.length; i++) {
      if (timestamps !== undefined) this.setTimestamp(timestamps[i]);
      if (errors === undefined) {
        call(batch[i] as T);
        continue;
      }
      const mark = collector.records.length;
      try {
        call(batch[i] as T);
      } catch (error) {
        collector.truncate(mark);
        errors.onError(error, batch[i], timestamps?.[i]);
      }
    }
  }
}

/** Runs a {@link ProcessFunction} on a stream that is not keyed (Flink's ProcessOperator). */
export class ProcessOperator<IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: ProcessFunction<IN, OUT>;
  readonly #context = new NonKeyedProcessContext();
  readonly #errors: RecordErrorHandler;

  constructor(fn: ProcessFunction<IN, OUT>, onError: RecordErrorPolicy = 'fail') {
    super();
    this.#fn = fn;
    this.#errors = new RecordErrorHandler(onError);
  }

  override open(context: OperatorContext): void {
    this.#context.context = context;
    this.#errors.open(context);
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

  override processWatermark(watermark: number): OUT[] {
    this.#context.currentWatermark = watermark;
    return [];
  }

  override close(): void {
    this.#fn.close?.();
  }
}

/** Runs a {@link CoProcessFunction} on two connected streams that are not keyed (Flink's CoProcessOperator). */
export class CoProcessOperator<IN1, IN2, OUT> extends StreamOperator<IN1, OUT> {
  readonly #fn: CoProcessFunction<IN1, IN2, OUT>;
  readonly #context = new NonKeyedProcessContext();
  readonly #errors: RecordErrorHandler;

  constructor(fn: CoProcessFunction<IN1, IN2, OUT>, onError: RecordErrorPolicy = 'fail') {
    super();
    this.#fn = fn;
    this.#errors = new RecordErrorHandler(onError);
  }

  override open(context: OperatorContext): void {
    this.#context.context = context;
    this.#errors.open(context);
    this.#fn.open?.(runtimeContext(context));
  }

  processBatch(batch: IN1[], timestamps?: readonly number[]): OUT[] {
    const context = this.#context;
    const fn = this.#fn;
    const collector = context.collector as TimestampedCollector<OUT>;
    context.run(batch, timestamps, (value) => fn.processElement1(value, context, collector), this.#errors);
    this.outputTimestamps = collector.timestamps;
    return collector.records;
  }

  override processBatch2(batch: unknown[], timestamps?: readonly number[]): OUT[] {
    const context = this.#context;
    const fn = this.#fn;
    const collector = context.collector as TimestampedCollector<OUT>;
    context.run(batch as IN2[], timestamps, (value) => fn.processElement2(value, context, collector), this.#errors);
    this.outputTimestamps = collector.timestamps;
    return collector.records;
  }

  override processWatermark(watermark: number): OUT[] {
    this.#context.currentWatermark = watermark;
    return [];
  }

  override close(): void {
    this.#fn.close?.();
  }
}
