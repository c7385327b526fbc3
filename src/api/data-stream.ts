import type { Sink } from '../connectors/sink.ts';
import type { KeySelector, OperatorNode, Partitioning, SinkNode, StreamGraph, StreamNode } from '../graph/stream-graph.ts';
import { KeyedProcessOperator } from '../runtime/operators/keyed-process-operator.ts';
import { FilterOperator, FlatMapOperator, IdentityOperator, MapOperator } from '../runtime/operators/stateless-operators.ts';
import type { StreamOperator } from '../runtime/stream-operator.ts';
import type { StateKey } from '../state/key-group-range-assignment.ts';
import { valueState } from '../state/state-descriptors.ts';
import type { ValueState } from '../state/state-types.ts';
import type { KeyedProcessFunction } from './functions.ts';

/** Per-operator settings. A `uid` keeps the operator's state across changes of the job: set it on every stateful operator. */
export interface OperatorOptions {
  name?: string;
  uid?: string;
  parallelism?: number;
}

interface Upstream {
  nodes: StreamNode[];
  partitioning: Partitioning;
  keySelector: KeySelector<unknown> | undefined;
}

/**
 * A stream of records of type T (Flink's DataStream). Builders never mutate: each call adds an
 * operator to the job's graph and returns a new stream whose type is the operator's output, so
 * the editor knows the record type at every step.
 */
export class DataStream<T> {
  protected readonly graph: StreamGraph;
  protected readonly upstream: Upstream;

  /** @internal */
  constructor(graph: StreamGraph, upstream: Upstream) {
    this.graph = graph;
    this.upstream = upstream;
  }

  map<R>(fn: (value: T) => R, options: OperatorOptions = {}): DataStream<R> {
    return this.transform<R>('map', () => new MapOperator(fn), options);
  }

  filter(predicate: (value: T) => boolean, options: OperatorOptions = {}): DataStream<T> {
    return this.transform<T>('filter', () => new FilterOperator(predicate), options);
  }

  flatMap<R>(fn: (value: T) => Iterable<R>, options: OperatorOptions = {}): DataStream<R> {
    return this.transform<R>('flatMap', () => new FlatMapOperator(fn), options);
  }

  /** Partitions the stream by key: records with equal keys go to the same subtask, and keyed state is scoped to the key. */
  keyBy<K extends StateKey>(keySelector: (value: T) => K): KeyedStream<T, K> {
    return new KeyedStream<T, K>(this.graph, { ...this.upstream, partitioning: 'hash', keySelector: keySelector as KeySelector<unknown> });
  }

  /** Spreads records round-robin over the next operator's subtasks. */
  rebalance(): DataStream<T> {
    return new DataStream<T>(this.graph, { ...this.upstream, partitioning: 'rebalance', keySelector: undefined });
  }

  /** Sends every record to every subtask of the next operator. */
  broadcast(): DataStream<T> {
    return new DataStream<T>(this.graph, { ...this.upstream, partitioning: 'broadcast', keySelector: undefined });
  }

  /** Merges streams of the same type. */
  union(...others: DataStream<T>[]): DataStream<T> {
    const nodes = [this, ...others].flatMap((stream) => stream.upstream.nodes);
    const merged = new DataStream<T>(this.graph, { nodes, partitioning: this.upstream.partitioning, keySelector: this.upstream.keySelector });
    return merged.transform<T>('union', () => new IdentityOperator<T>(), {});
  }

  sinkTo(sink: Sink<T>, options: OperatorOptions = {}): void {
    const node = this.graph.addNode<SinkNode>({
      kind: 'sink',
      uid: options.uid ?? '',
      name: options.name ?? sink.name,
      parallelism: options.parallelism,
      sink: sink as Sink<unknown>,
    });
    this.connect(node);
  }

  /** @internal Adds an operator fed by this stream. */
  protected transform<R>(kind: string, createOperator: () => StreamOperator<T, R>, options: OperatorOptions): DataStream<R> {
    const node = this.graph.addNode<OperatorNode>({
      kind: 'operator',
      uid: options.uid ?? '',
      name: options.name ?? kind,
      parallelism: options.parallelism,
      createOperator: createOperator as () => StreamOperator<unknown, unknown>,
      keySelector: this.upstream.keySelector,
    });
    this.connect(node);
    return new DataStream<R>(this.graph, { nodes: [node], partitioning: 'forward', keySelector: undefined });
  }

  private connect(node: StreamNode): void {
    for (const source of this.upstream.nodes) {
      this.graph.addEdge({ source: source.id, target: node.id, partitioning: this.upstream.partitioning, keySelector: this.upstream.keySelector });
    }
  }
}

/** A stream partitioned by key (Flink's KeyedStream). */
export class KeyedStream<T, K extends StateKey> extends DataStream<T> {
  /** Per-record logic with keyed state and processing-time timers. */
  process<R>(fn: KeyedProcessFunction<K, T, R>, options: OperatorOptions = {}): DataStream<R> {
    const keySelector = this.upstream.keySelector as KeySelector<T>;
    return this.transform<R>('process', () => new KeyedProcessOperator<K, T, R>(fn, keySelector), options);
  }

  /** A running reduction per key: emits the new reduced value after every record. */
  reduce(reduce: (accumulated: T, value: T) => T, options: OperatorOptions = {}): DataStream<T> {
    let state: ValueState<T>;
    return this.process<T>(
      {
        open(context) {
          state = context.getState(valueState<T>('reduce'));
        },
        processElement(value, _context, out) {
          const previous = state.value();
          const next = previous === undefined ? value : reduce(previous, value);
          state.update(next);
          out.collect(next);
        },
      },
      { name: 'reduce', ...options },
    );
  }
}
