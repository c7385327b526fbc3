import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import type { Window } from '../core/windowing/window.ts';
import type { WindowAssigner } from '../core/windowing/window-assigner.ts';
import type { StreamGraph } from '../graph/stream-graph.ts';
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
import type { Upstream } from './stream-transformations.ts';

/**
 * Makes the streams and builders of one job's graph. Every builder holds the factory of its job and
 * makes the next builder through it, so the builder classes never import each other: the
 * environment (stream-execution-environment.ts) is the one place that knows them all.
 */
export interface StreamFactory {
  readonly graph: StreamGraph;
  dataStream<T>(upstream: Upstream): DataStream<T>;
  operatorOutput<T>(upstream: Upstream): SingleOutputStreamOperator<T>;
  keyedStream<T, K extends KeyLike>(upstream: Upstream): KeyedStream<T, K>;
  windowedStream<T, K extends KeyLike, W extends Window>(upstream: Upstream, assigner: WindowAssigner<T, W>): WindowedStream<T, K, W>;
  connectedStreams<T1, T2>(first: Upstream, second: Upstream): ConnectedStreams<T1, T2>;
  keyedConnectedStreams<T1, T2, K extends KeyLike>(first: Upstream, second: Upstream): KeyedConnectedStreams<T1, T2, K>;
  joinedStreams<T1, T2>(first: DataStream<T1>, second: DataStream<T2>): JoinedStreams<T1, T2>;
  coGroupedStreams<T1, T2>(first: DataStream<T1>, second: DataStream<T2>): CoGroupedStreams<T1, T2>;
  intervalJoin<T1, T2, K extends KeyLike>(left: KeyedStream<T1, K>, right: KeyedStream<T2, K>): IntervalJoin<T1, T2, K>;
}
