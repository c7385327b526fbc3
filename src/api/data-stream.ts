import type { Sink } from '../core/connector/sink.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { OutputTag } from '../core/functions/output-tag.ts';
import type { KeyedProcessFunction, ProcessFunction } from '../core/functions/process-functions.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import { valueState } from '../core/state/state-descriptors.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { ValueState } from '../core/state/state-types.ts';
import type { GlobalWindow, Window } from '../core/windowing/window.ts';
import type { WindowAssigner } from '../core/windowing/window-assigner.ts';
import type { OperatorNode, Partitioning, SinkNode, StreamGraph, StreamNode } from '../graph/stream-graph.ts';
import { KeyedProcessOperator } from '../runtime/operators/keyed-process-operator.ts';
import { ProcessOperator } from '../runtime/operators/process-operator.ts';
import { FilterOperator, FlatMapOperator, IdentityOperator, MapOperator } from '../runtime/operators/stateless-operators.ts';
import { ConnectedStreams } from './connected-streams.ts';
import { IntervalJoin } from './interval-join.ts';
import { CoGroupedStreams, JoinedStreams } from './joined-streams.ts';
import { CountTrigger } from './windowing/count-trigger.ts';
import { GlobalWindows } from './windowing/global-windows.ts';
import { PurgingTrigger } from './windowing/purging-trigger.ts';
import { WindowedStream } from './windowing/windowed-stream.ts';

/** Per-operator settings. A `uid` keeps the operator's state across changes of the job: set it on every stateful operator. */
export interface OperatorOptions {
  name?: string;
  uid?: string;
  parallelism?: number;
}

/** @internal One stream feeding an operator: a node's main output, or one of its side outputs. */
export interface StreamInput {
  node: StreamNode;
  outputTag?: string | undefined;
}

/** @internal How a stream reaches the next operator. */
export interface Upstream {
  inputs: StreamInput[];
  partitioning: Partitioning;
  keySelector: KeySelector<unknown> | undefined;
}

/** @internal What an operator node is made of, for {@link addOperator}. */
export interface OperatorSpec {
  kind: string;
  createOperator: () => StreamOperator<unknown, unknown>;
  options: OperatorOptions;
  /** The key of each record, for keyed operators (one input). */
  keySelector?: KeySelector<unknown> | undefined;
  needsWatermarks?: string | undefined;
}

/** @internal Adds an operator fed by one or two upstreams (two: input 0 and input 1) and returns its output stream. */
export function addOperator<R>(graph: StreamGraph, upstreams: Upstream[], spec: OperatorSpec): SingleOutputStreamOperator<R> {
  const node = graph.addNode<OperatorNode>({
    kind: 'operator',
    uid: spec.options.uid ?? '',
    name: spec.options.name ?? spec.kind,
    parallelism: spec.options.parallelism,
    createOperator: spec.createOperator,
    keySelector: spec.keySelector,
    twoInput: upstreams.length === 2,
    needsWatermarks: spec.needsWatermarks,
  });
  upstreams.forEach((upstream, inputIndex) => {
    connectTo(graph, upstream, node, inputIndex);
  });
  return new SingleOutputStreamOperator<R>(graph, { inputs: [{ node }], partitioning: 'forward', keySelector: undefined });
}

function connectTo(graph: StreamGraph, upstream: Upstream, node: StreamNode, inputIndex: number): void {
  for (const input of upstream.inputs) {
    graph.addEdge({
      source: input.node.id,
      target: node.id,
      partitioning: upstream.partitioning,
      keySelector: upstream.keySelector,
      inputIndex,
      outputTag: input.outputTag,
    });
  }
}

/**
 * A stream of records of type T (Flink's DataStream). Builders never mutate: each call adds an
 * operator to the job's graph and returns a new stream whose type is the operator's output, so
 * the editor knows the record type at every step.
 */
export class DataStream<T> {
  /** @internal */
  readonly graph: StreamGraph;
  /** @internal */
  readonly upstream: Upstream;

  /** @internal */
  constructor(graph: StreamGraph, upstream: Upstream) {
    this.graph = graph;
    this.upstream = upstream;
  }

  map<R>(fn: (value: T) => R, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    return this.transform<R>('map', () => new MapOperator(fn), options);
  }

  filter(predicate: (value: T) => boolean, options: OperatorOptions = {}): SingleOutputStreamOperator<T> {
    return this.transform<T>('filter', () => new FilterOperator(predicate), options);
  }

  flatMap<R>(fn: (value: T) => Iterable<R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    return this.transform<R>('flatMap', () => new FlatMapOperator(fn), options);
  }

  /** Per-record logic with side outputs (`context.output(tag, value)`); keyed state and timers need `keyBy(...).process(...)`. */
  process<R>(fn: ProcessFunction<T, R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    return this.transform<R>('process', () => new ProcessOperator<T, R>(fn), options);
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
  union(...others: DataStream<T>[]): SingleOutputStreamOperator<T> {
    const inputs = [this, ...others].flatMap((stream) => stream.upstream.inputs);
    const merged = new DataStream<T>(this.graph, { inputs, partitioning: this.upstream.partitioning, keySelector: this.upstream.keySelector });
    return merged.transform<T>('union', () => new IdentityOperator<T>(), {});
  }

  /**
   * Two streams into one function (Flink's connect): `a.connect(b).process(coProcessFunction)`, or
   * keyed on both sides with shared keyed state and timers:
   * `a.connect(b).keyBy(keyOfA, keyOfB).process(keyedCoProcessFunction)`.
   */
  connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2> {
    return new ConnectedStreams<T, T2>(this.graph, this.upstream, other.upstream);
  }

  /** A join of two streams over windows (Flink's join): `a.join(b).where(keyOfA).equalTo(keyOfB).window(assigner).apply(fn)`. */
  join<T2>(other: DataStream<T2>): JoinedStreams<T, T2> {
    return new JoinedStreams<T, T2>(this, other);
  }

  /** Both streams' records of a key and window together (Flink's coGroup): `a.coGroup(b).where(...).equalTo(...).window(...).apply(fn)`. */
  coGroup<T2>(other: DataStream<T2>): CoGroupedStreams<T, T2> {
    return new CoGroupedStreams<T, T2>(this, other);
  }

  sinkTo(sink: Sink<T>, options: OperatorOptions = {}): void {
    const node = this.graph.addNode<SinkNode>({
      kind: 'sink',
      uid: options.uid ?? '',
      name: options.name ?? sink.name,
      parallelism: options.parallelism,
      sink: sink as Sink<unknown>,
    });
    connectTo(this.graph, this.upstream, node, 0);
  }

  /** @internal Adds an operator fed by this stream. */
  protected transform<R>(kind: string, createOperator: () => StreamOperator<T, R>, options: OperatorOptions): SingleOutputStreamOperator<R> {
    return addOperator<R>(this.graph, [this.upstream], {
      kind,
      createOperator: createOperator as () => StreamOperator<unknown, unknown>,
      options,
      keySelector: this.upstream.keySelector,
    });
  }
}

/**
 * The output of an operator (Flink's SingleOutputStreamOperator): a stream, plus the side outputs
 * the operator emits with `context.output(tag, value)` (and a window's late records).
 */
export class SingleOutputStreamOperator<T> extends DataStream<T> {
  /** The records the operator emitted to `tag`. */
  getSideOutput<X>(tag: OutputTag<X>): DataStream<X> {
    const input = this.upstream.inputs[0] as StreamInput;
    return new DataStream<X>(this.graph, { inputs: [{ node: input.node, outputTag: tag.id }], partitioning: 'forward', keySelector: undefined });
  }
}

/** A stream partitioned by key (Flink's KeyedStream). */
export class KeyedStream<T, K extends StateKey> extends DataStream<T> {
  /** Per-record logic with keyed state, timers (event and processing time) and side outputs. */
  override process<R>(fn: KeyedProcessFunction<K, T, R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    const keySelector = this.upstream.keySelector as KeySelector<T>;
    return this.transform<R>('process', () => new KeyedProcessOperator<K, T, R>(fn, keySelector), options);
  }

  /** A running reduction per key: emits the new reduced value after every record. */
  reduce(reduce: (accumulated: T, value: T) => T, options: OperatorOptions = {}): SingleOutputStreamOperator<T> {
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

  /**
   * Windows per key (Flink's window): `keyed.window(TumblingEventTimeWindows.of('1m')).aggregate(...)`.
   * Event-time windows need a watermark strategy on the sources.
   */
  window<W extends Window>(assigner: WindowAssigner<T, W> | WindowAssigner<unknown, W>): WindowedStream<T, K, W> {
    return new WindowedStream<T, K, W>(this.graph, this.upstream, assigner as WindowAssigner<T, W>);
  }

  /** Windows of `size` records per key (Flink's countWindow): global windows fired and purged every `size` records. */
  countWindow(size: number): WindowedStream<T, K, GlobalWindow> {
    return this.window(GlobalWindows.create()).trigger(PurgingTrigger.of(CountTrigger.of(size)));
  }

  /**
   * Joins with another keyed stream on event time (Flink's intervalJoin): records of this stream
   * with records of `other` of the same key whose timestamps lie within [lower, upper] of theirs.
   * `keyed.intervalJoin(otherKeyed).between('-5s', '5s').process(fn)`.
   */
  intervalJoin<T2>(other: KeyedStream<T2, K>): IntervalJoin<T, T2, K> {
    return new IntervalJoin<T, T2, K>(this, other);
  }
}
