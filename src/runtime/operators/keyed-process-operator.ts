import type { Collector, KeyedContext, KeyedProcessFunction, RuntimeContext, TimerService } from '../../api/functions.ts';
import { WeirError } from '../../errors.ts';
import type { KeySelector } from '../../graph/stream-graph.ts';
import type { HeapKeyedStateBackend } from '../../state/heap-keyed-state-backend.ts';
import { type StateKey, validateStateKey } from '../../state/key-group-range-assignment.ts';
import type { StateDescriptor } from '../../state/state-descriptors.ts';
import { type OperatorContext, StreamOperator } from '../stream-operator.ts';

/**
 * Runs a {@link KeyedProcessFunction}: sets the current key of the keyed state backend before each
 * record and each timer, so state handles and timers act on that key.
 */
export class KeyedProcessOperator<K extends StateKey, IN, OUT> extends StreamOperator<IN, OUT> {
  readonly #fn: KeyedProcessFunction<K, IN, OUT>;
  readonly #keySelector: KeySelector<IN>;
  #backend!: HeapKeyedStateBackend;
  #context!: OperatorContext;
  #out: OUT[] = [];
  readonly #collector: Collector<OUT> = { collect: (record) => this.#out.push(record) };
  readonly #keyedContext: KeyedContext<K>;

  constructor(fn: KeyedProcessFunction<K, IN, OUT>, keySelector: KeySelector<IN>) {
    super();
    this.#fn = fn;
    this.#keySelector = keySelector;
    const timerService: TimerService = {
      currentProcessingTime: () => Date.now(),
      registerProcessingTimeTimer: (timestamp) => {
        this.#backend.registerTimer('processing', timestamp);
        this.#context.requestProcessingTimeCallback(timestamp);
      },
      deleteProcessingTimeTimer: (timestamp) => this.#backend.deleteTimer('processing', timestamp),
    };
    this.#keyedContext = { getCurrentKey: () => this.#backend.getCurrentKey() as K, timerService };
  }

  override open(context: OperatorContext): void {
    if (context.keyedState === undefined) {
      throw new WeirError('NOT_KEYED', `operator "${context.operatorName}" needs a keyed stream`, {
        hint: 'call keyBy(...) before process(...)',
        fault: 'user',
      });
    }
    this.#backend = context.keyedState;
    this.#context = context;
    const runtime: RuntimeContext = {
      subtaskIndex: context.subtaskIndex,
      parallelism: context.parallelism,
      attemptNumber: context.attemptNumber,
      getState: <S>(descriptor: StateDescriptor<S>) => this.#backend.getState(descriptor) as S,
    };
    this.#fn.open?.(runtime);
    const next = this.#backend.nextTimerTimestamp('processing');
    if (next !== undefined) context.requestProcessingTimeCallback(next);
  }

  processBatch(batch: IN[]): OUT[] {
    const fn = this.#fn;
    const backend = this.#backend;
    const select = this.#keySelector;
    const name = this.#context.operatorName;
    this.#out = [];
    for (let i = 0; i < batch.length; i++) {
      const value = batch[i] as IN;
      backend.setCurrentKey(validateStateKey(select(value), name));
      fn.processElement(value, this.#keyedContext, this.#collector);
    }
    return this.#out;
  }

  override onProcessingTime(now: number): OUT[] {
    this.#out = [];
    const onTimer = this.#fn.onTimer;
    this.#backend.pollTimersUpTo('processing', now, (_key, timestamp) => {
      onTimer?.call(this.#fn, timestamp, this.#keyedContext, this.#collector);
    });
    const next = this.#backend.nextTimerTimestamp('processing');
    if (next !== undefined) this.#context.requestProcessingTimeCallback(next);
    return this.#out;
  }

  override close(): void {
    this.#fn.close?.();
  }
}
