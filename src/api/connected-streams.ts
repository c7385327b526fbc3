import type { KeySelector } from '../core/functions/key-selector.ts';
import type { CoProcessFunction, KeyedCoProcessFunction } from '../core/functions/process-functions.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { StreamGraph } from '../graph/stream-graph.ts';
import { KeyedCoProcessOperator } from '../runtime/operators/keyed-co-process-operator.ts';
import { CoProcessOperator } from '../runtime/operators/process-operator.ts';
import { addOperator, type OperatorOptions, type SingleOutputStreamOperator, type Upstream } from './data-stream.ts';

/** Two streams, maybe of different types, into one function (Flink's ConnectedStreams). */
export class ConnectedStreams<T1, T2> {
  readonly #graph: StreamGraph;
  readonly #first: Upstream;
  readonly #second: Upstream;

  /** @internal */
  constructor(graph: StreamGraph, first: Upstream, second: Upstream) {
    this.#graph = graph;
    this.#first = first;
    this.#second = second;
  }

  /**
   * Keys both streams by the same kind of key: records of either stream with equal keys go to the
   * same subtask (the same key group) and share keyed state and timers there.
   */
  keyBy<K extends StateKey>(keyOfFirst: (value: T1) => K, keyOfSecond: (value: T2) => K): KeyedConnectedStreams<T1, T2, K> {
    return new KeyedConnectedStreams<T1, T2, K>(
      this.#graph,
      { ...this.#first, partitioning: 'hash', keySelector: keyOfFirst as KeySelector<unknown> },
      { ...this.#second, partitioning: 'hash', keySelector: keyOfSecond as KeySelector<unknown> },
    );
  }

  /** Without keys: each subtask gets some records of each stream; side outputs, no keyed state or timers. */
  process<R>(fn: CoProcessFunction<T1, T2, R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    return addOperator<R>(this.#graph, [this.#first, this.#second], {
      kind: 'co-process',
      createOperator: () => new CoProcessOperator<T1, T2, R>(fn) as StreamOperator<unknown, unknown>,
      options,
    });
  }
}

/** Two streams keyed by the same key (Flink's ConnectedStreams after keyBy). */
export class KeyedConnectedStreams<T1, T2, K extends StateKey> {
  readonly #graph: StreamGraph;
  readonly #first: Upstream;
  readonly #second: Upstream;

  /** @internal */
  constructor(graph: StreamGraph, first: Upstream, second: Upstream) {
    this.#graph = graph;
    this.#first = first;
    this.#second = second;
  }

  /** Both streams' records of a key, with the key's shared state and timers (event and processing time). */
  process<R>(fn: KeyedCoProcessFunction<K, T1, T2, R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    const first = this.#first.keySelector as KeySelector<T1>;
    const second = this.#second.keySelector as KeySelector<T2>;
    return addOperator<R>(this.#graph, [this.#first, this.#second], {
      kind: 'co-process',
      createOperator: () => new KeyedCoProcessOperator<K, T1, T2, R>(fn, first, second) as StreamOperator<unknown, unknown>,
      options,
    });
  }
}
