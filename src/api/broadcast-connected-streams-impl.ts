import type { BroadcastProcessFunction, KeyedBroadcastProcessFunction } from '../core/functions/broadcast-process-functions.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import type { MapStateDescriptor } from '../core/state/state-descriptors.ts';
import type { KeyLike } from '../core/state/state-key.ts';
import { CoBroadcastWithKeyedOperator, CoBroadcastWithNonKeyedOperator } from '../runtime/operators/co-broadcast-operators.ts';
import type { BroadcastConnectedStream, BroadcastStream, KeyedBroadcastConnectedStream, SingleOutputStreamOperator } from './data-stream.ts';
import type { StreamFactory } from './stream-factory.ts';
import { addOperator, addOperatorDeadLetters, errorPolicyOf, type ProcessingOptions, type Upstream } from './stream-transformations.ts';

/** The {@link BroadcastStream} of a job's graph: a stream partitioned 'broadcast', with the descriptors of the state it fills. */
export class BroadcastStreamImpl<T> implements BroadcastStream<T> {
  readonly upstream: Upstream;
  readonly descriptors: readonly MapStateDescriptor<unknown, unknown>[];

  constructor(upstream: Upstream, descriptors: readonly MapStateDescriptor<unknown, unknown>[]) {
    this.upstream = { ...upstream, partitioning: 'broadcast', keySelector: undefined, reinterpreted: undefined };
    this.descriptors = descriptors;
  }
}

/** `stream.connect(broadcastStream)` (Flink's BroadcastConnectedStream), keyed or not by the main stream. */
export class BroadcastConnectedStreamImpl<T, B> implements BroadcastConnectedStream<T, B>, KeyedBroadcastConnectedStream<T, KeyLike, B> {
  readonly #factory: StreamFactory;
  readonly #main: Upstream;
  readonly #broadcast: BroadcastStreamImpl<B>;

  constructor(factory: StreamFactory, main: Upstream, broadcast: BroadcastStreamImpl<B>) {
    this.#factory = factory;
    this.#main = main;
    this.#broadcast = broadcast;
  }

  process<R>(
    fn: BroadcastProcessFunction<T, B, R> | KeyedBroadcastProcessFunction<KeyLike, T, B, R>,
    options: ProcessingOptions = {},
  ): SingleOutputStreamOperator<R> {
    const onError = errorPolicyOf(options, 'broadcast-process');
    const descriptors = this.#broadcast.descriptors;
    const keySelector = this.#main.keySelector as KeySelector<T> | undefined;
    const createOperator =
      keySelector === undefined
        ? () => new CoBroadcastWithNonKeyedOperator<T, B, R>(fn as BroadcastProcessFunction<T, B, R>, descriptors, onError)
        : () => new CoBroadcastWithKeyedOperator<KeyLike, T, B, R>(fn as KeyedBroadcastProcessFunction<KeyLike, T, B, R>, keySelector, descriptors, onError);
    const output = addOperator(this.#factory.graph, [this.#main, this.#broadcast.upstream], {
      kind: 'broadcast-process',
      createOperator: createOperator as () => StreamOperator<unknown, unknown>,
      options,
      keySelector: this.#main.keySelector,
    });
    addOperatorDeadLetters(this.#factory.graph, output, options);
    return this.#factory.operatorOutput<R>(output);
  }
}
