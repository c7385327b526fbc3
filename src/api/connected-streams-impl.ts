import type { KeySelector } from '../core/functions/key-selector.ts';
import type { CoProcessFunction, KeyedCoProcessFunction } from '../core/functions/process-functions.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import { KeyedCoProcessOperator } from '../runtime/operators/keyed-co-process-operator.ts';
import { CoProcessOperator } from '../runtime/operators/process-operator.ts';
import { compositeKeySelector } from '../state/composite-key.ts';
import type { ConnectedStreams, KeyedConnectedStreams, SingleOutputStreamOperator } from './data-stream.ts';
import type { StreamFactory } from './stream-factory.ts';
import { addOperator, addOperatorDeadLetters, errorPolicyOf, type ProcessingOptions, type Upstream } from './stream-transformations.ts';

/** The {@link ConnectedStreams} of a job's graph. */
export class ConnectedStreamsImpl<T1, T2> implements ConnectedStreams<T1, T2> {
  readonly #factory: StreamFactory;
  readonly #first: Upstream;
  readonly #second: Upstream;

  constructor(factory: StreamFactory, first: Upstream, second: Upstream) {
    this.#factory = factory;
    this.#first = first;
    this.#second = second;
  }

  keyBy<K extends KeyLike>(keyOfFirst: (value: T1) => K, keyOfSecond: (value: T2) => K): KeyedConnectedStreams<T1, T2, K> {
    return this.#factory.keyedConnectedStreams<T1, T2, K>(
      { ...this.#first, partitioning: 'hash', keySelector: compositeKeySelector(keyOfFirst) as KeySelector<unknown> },
      { ...this.#second, partitioning: 'hash', keySelector: compositeKeySelector(keyOfSecond) as KeySelector<unknown> },
    );
  }

  process<R>(fn: CoProcessFunction<T1, T2, R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    const onError = errorPolicyOf(options, 'co-process');
    const output = addOperator(this.#factory.graph, [this.#first, this.#second], {
      kind: 'co-process',
      createOperator: () => new CoProcessOperator<T1, T2, R>(fn, onError) as StreamOperator<unknown, unknown>,
      options,
    });
    addOperatorDeadLetters(this.#factory.graph, output, options);
    return this.#factory.operatorOutput<R>(output);
  }
}

/** The {@link KeyedConnectedStreams} of a job's graph. */
export class KeyedConnectedStreamsImpl<T1, T2, K extends KeyLike> implements KeyedConnectedStreams<T1, T2, K> {
  readonly #factory: StreamFactory;
  readonly #first: Upstream;
  readonly #second: Upstream;

  constructor(factory: StreamFactory, first: Upstream, second: Upstream) {
    this.#factory = factory;
    this.#first = first;
    this.#second = second;
  }

  process<R>(fn: KeyedCoProcessFunction<K, T1, T2, R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    const first = this.#first.keySelector as KeySelector<T1>;
    const second = this.#second.keySelector as KeySelector<T2>;
    const onError = errorPolicyOf(options, 'co-process');
    const output = addOperator(this.#factory.graph, [this.#first, this.#second], {
      kind: 'co-process',
      createOperator: () => new KeyedCoProcessOperator<K, T1, T2, R>(fn, first, second, onError) as StreamOperator<unknown, unknown>,
      options,
    });
    addOperatorDeadLetters(this.#factory.graph, output, options);
    return this.#factory.operatorOutput<R>(output);
  }
}
