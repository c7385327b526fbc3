import type { Source } from '../core/connector/source.ts';
import type { WatermarkStrategy } from '../core/event-time/watermark-strategy.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import type { Window } from '../core/windowing/window.ts';
import type { WindowAssigner } from '../core/windowing/window-assigner.ts';
import { type SourceNode, StreamGraph } from '../graph/stream-graph.ts';
import { ConnectedStreamsImpl, KeyedConnectedStreamsImpl } from './connected-streams-impl.ts';
import type {
  CoGroupedStreams,
  ConnectedStreams,
  DataStream,
  IntervalJoin,
  JoinedStreams,
  KeyedConnectedStreams,
  KeyedStream,
  SingleOutputStreamOperator,
  WindowedStream,
} from './data-stream.ts';
import { DataStreamImpl, SingleOutputStreamOperatorImpl } from './data-stream-impl.ts';
import { IntervalJoinImpl } from './interval-join-impl.ts';
import { CoGroupedStreamsImpl, JoinedStreamsImpl } from './joined-streams-impl.ts';
import { KeyedStreamImpl } from './keyed-stream-impl.ts';
import type { StreamFactory } from './stream-factory.ts';
import { addDeadLetters, type OperatorOptions, outputOf, type Upstream } from './stream-transformations.ts';
import { WindowedStreamImpl } from './windowing/windowed-stream-impl.ts';

/** The settings of a source: an operator's, plus event time. */
export interface SourceOptions<T> extends OperatorOptions {
  /**
   * How records get their event time and the stream its watermarks (Flink's fromSource argument).
   * Without one the stream has no event time: event-time windows and joins cannot follow it.
   */
  watermarkStrategy?: WatermarkStrategy<T>;
}

/** Where a job's streams start (Flink's StreamExecutionEnvironment); the options live in the job definition. */
export class StreamExecutionEnvironment {
  /** @internal */
  readonly graph = new StreamGraph();
  readonly #streams: StreamFactory = new JobStreamFactory(this.graph);

  fromSource<T>(source: Source<T>, options: SourceOptions<NoInfer<T>> = {}): DataStream<T> {
    const node = this.graph.addNode<SourceNode>({
      kind: 'source',
      uid: options.uid ?? '',
      name: options.name ?? source.name,
      parallelism: options.parallelism,
      source: source as Source<unknown>,
      watermarkStrategy: options.watermarkStrategy as WatermarkStrategy<unknown> | undefined,
    });
    // A source with a dead-letter policy: its dead letters go to their sink through a side output.
    if (source.deadLetters !== undefined) addDeadLetters(this.graph, node, source.deadLetters, options);
    return this.#streams.dataStream<T>(outputOf(node));
  }
}

/** The one place that knows every builder class: each builder makes the next through this factory. */
class JobStreamFactory implements StreamFactory {
  readonly graph: StreamGraph;

  constructor(graph: StreamGraph) {
    this.graph = graph;
  }

  dataStream<T>(upstream: Upstream): DataStream<T> {
    return new DataStreamImpl<T>(this, upstream);
  }

  operatorOutput<T>(upstream: Upstream): SingleOutputStreamOperator<T> {
    return new SingleOutputStreamOperatorImpl<T>(this, upstream);
  }

  keyedStream<T, K extends KeyLike>(upstream: Upstream): KeyedStream<T, K> {
    return new KeyedStreamImpl<T, K>(this, upstream);
  }

  windowedStream<T, K extends KeyLike, W extends Window>(upstream: Upstream, assigner: WindowAssigner<T, W>): WindowedStream<T, K, W> {
    return new WindowedStreamImpl<T, K, W>(this, upstream, assigner);
  }

  connectedStreams<T1, T2>(first: Upstream, second: Upstream): ConnectedStreams<T1, T2> {
    return new ConnectedStreamsImpl<T1, T2>(this, first, second);
  }

  keyedConnectedStreams<T1, T2, K extends KeyLike>(first: Upstream, second: Upstream): KeyedConnectedStreams<T1, T2, K> {
    return new KeyedConnectedStreamsImpl<T1, T2, K>(this, first, second);
  }

  joinedStreams<T1, T2>(first: DataStream<T1>, second: DataStream<T2>): JoinedStreams<T1, T2> {
    return new JoinedStreamsImpl<T1, T2>(this, first, second);
  }

  coGroupedStreams<T1, T2>(first: DataStream<T1>, second: DataStream<T2>): CoGroupedStreams<T1, T2> {
    return new CoGroupedStreamsImpl<T1, T2>(this, first, second);
  }

  intervalJoin<T1, T2, K extends KeyLike>(left: KeyedStream<T1, K>, right: KeyedStream<T2, K>): IntervalJoin<T1, T2, K> {
    return new IntervalJoinImpl<T1, T2, K>(this, left, right);
  }
}
