import type { Sink } from '../core/connector/sink.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { OutputTag } from '../core/functions/output-tag.ts';
import type { ProcessFunction } from '../core/functions/process-functions.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import type { MapStateDescriptor } from '../core/state/state-descriptors.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import type { StreamGraph } from '../graph/stream-graph.ts';
import { ProcessOperator } from '../runtime/operators/process-operator.ts';
import { FilterOperator, FlatMapOperator, IdentityOperator, MapOperator } from '../runtime/operators/stateless-operators.ts';
import { compositeKeySelector } from '../state/composite-key.ts';
import { BroadcastConnectedStreamImpl, BroadcastStreamImpl } from './broadcast-connected-streams-impl.ts';
import type {
  BroadcastConnectedStream,
  BroadcastStream,
  CoGroupedStreams,
  ConnectedStreams,
  DataStream,
  JoinedStreams,
  KeyedStream,
  SingleOutputStreamOperator,
} from './data-stream.ts';
import type { StreamFactory } from './stream-factory.ts';
import {
  addOperator,
  addOperatorDeadLetters,
  addSink,
  errorPolicyOf,
  type OperatorOptions,
  type ProcessingOptions,
  type StreamInput,
  type Upstream,
} from './stream-transformations.ts';

/** The {@link DataStream} of a job's graph: each call adds to the graph through the job's {@link StreamFactory}. */
export class DataStreamImpl<T> implements DataStream<T> {
  readonly factory: StreamFactory;
  readonly upstream: Upstream;

  constructor(factory: StreamFactory, upstream: Upstream) {
    this.factory = factory;
    this.upstream = upstream;
  }

  get graph(): StreamGraph {
    return this.factory.graph;
  }

  map<R>(fn: (value: T) => R, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    const onError = errorPolicyOf(options, 'map');
    return this.transform<R>('map', () => new MapOperator(fn, onError), options);
  }

  filter<S extends T>(predicate: (value: T) => value is S, options?: ProcessingOptions): SingleOutputStreamOperator<S>;
  filter(predicate: (value: T) => boolean, options?: ProcessingOptions): SingleOutputStreamOperator<T>;
  filter(predicate: (value: T) => boolean, options: ProcessingOptions = {}): SingleOutputStreamOperator<T> {
    const onError = errorPolicyOf(options, 'filter');
    return this.transform<T>('filter', () => new FilterOperator(predicate, onError), options);
  }

  flatMap<R>(fn: (value: T) => Iterable<R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    const onError = errorPolicyOf(options, 'flatMap');
    return this.transform<R>('flatMap', () => new FlatMapOperator(fn, onError), options);
  }

  process<R>(fn: ProcessFunction<T, R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    const onError = errorPolicyOf(options, 'process');
    return this.transform<R>('process', () => new ProcessOperator<T, R>(fn, onError), options);
  }

  keyBy<K extends KeyLike>(keySelector: (value: T) => K): KeyedStream<T, K> {
    return this.factory.keyedStream<T, K>({
      ...this.upstream,
      partitioning: 'hash',
      keySelector: compositeKeySelector(keySelector) as KeySelector<unknown>,
      reinterpreted: undefined,
    });
  }

  rebalance(): DataStream<T> {
    return this.factory.dataStream<T>({ ...this.upstream, partitioning: 'rebalance', keySelector: undefined, reinterpreted: undefined });
  }

  broadcast(): DataStream<T>;
  broadcast(...descriptors: [MapStateDescriptor<unknown, unknown>, ...MapStateDescriptor<unknown, unknown>[]]): BroadcastStream<T>;
  broadcast(...descriptors: MapStateDescriptor<unknown, unknown>[]): DataStream<T> | BroadcastStream<T> {
    if (descriptors.length > 0) return new BroadcastStreamImpl<T>(this.upstream, checkedDescriptors(descriptors));
    return this.factory.dataStream<T>({ ...this.upstream, partitioning: 'broadcast', keySelector: undefined, reinterpreted: undefined });
  }

  union(...others: DataStream<T>[]): SingleOutputStreamOperator<T> {
    const inputs = [this, ...others].flatMap((stream) => stream.upstream.inputs);
    const merged = new DataStreamImpl<T>(this.factory, { inputs, partitioning: this.upstream.partitioning, keySelector: this.upstream.keySelector });
    return merged.transform<T>('union', () => new IdentityOperator<T>(), {});
  }

  connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  connect<T2>(other: BroadcastStream<T2>): BroadcastConnectedStream<T, T2>;
  connect<T2>(other: DataStream<T2> | BroadcastStream<T2>): ConnectedStreams<T, T2> | BroadcastConnectedStream<T, T2> {
    if (other instanceof BroadcastStreamImpl) return new BroadcastConnectedStreamImpl<T, T2>(this.factory, this.upstream, other);
    return this.factory.connectedStreams<T, T2>(this.upstream, other.upstream);
  }

  join<T2>(other: DataStream<T2>): JoinedStreams<T, T2> {
    return this.factory.joinedStreams<T, T2>(this, other);
  }

  coGroup<T2>(other: DataStream<T2>): CoGroupedStreams<T, T2> {
    return this.factory.coGroupedStreams<T, T2>(this, other);
  }

  sinkTo(sink: Sink<T>, options: OperatorOptions = {}): void {
    addSink(this.graph, this.upstream, sink as Sink<unknown>, options);
  }

  /** Adds an operator fed by this stream. */
  protected transform<R>(kind: string, createOperator: () => StreamOperator<T, R>, options: ProcessingOptions): SingleOutputStreamOperator<R> {
    const output = addOperator(this.graph, [this.upstream], {
      kind,
      createOperator: createOperator as () => StreamOperator<unknown, unknown>,
      options,
      keySelector: this.upstream.keySelector,
    });
    addOperatorDeadLetters(this.graph, output, options);
    return this.factory.operatorOutput<R>(output);
  }
}

/** The {@link SingleOutputStreamOperator} of a job's graph. */
export class SingleOutputStreamOperatorImpl<T> extends DataStreamImpl<T> implements SingleOutputStreamOperator<T> {
  getSideOutput<X>(tag: OutputTag<X>): DataStream<X> {
    const input = this.upstream.inputs[0] as StreamInput;
    return this.factory.dataStream<X>({ inputs: [{ node: input.node, outputTag: tag.id }], partitioning: 'forward', keySelector: undefined });
  }
}

/** Broadcast state descriptors: map-state descriptors of distinct names. */
function checkedDescriptors(descriptors: MapStateDescriptor<unknown, unknown>[]): MapStateDescriptor<unknown, unknown>[] {
  const names = new Set<string>();
  for (const descriptor of descriptors) {
    if (descriptor?.kind !== 'map') {
      throw new WeirError(
        'INVALID_CONFIG',
        `broadcast(...): broadcast state is map state, not ${JSON.stringify(descriptor?.kind)} state ("${String(descriptor?.name)}")`,
        {
          hint: "pass map-state descriptors: stream.broadcast(mapState<string, Rule>('rules'))",
        },
      );
    }
    if (names.has(descriptor.name))
      throw new WeirError('INVALID_CONFIG', `broadcast(...): the descriptor "${descriptor.name}" is given twice`, {
        hint: 'give each broadcast state its own name',
      });
    names.add(descriptor.name);
  }
  return descriptors;
}
