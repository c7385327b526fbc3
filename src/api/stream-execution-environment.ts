import type { Source } from '../connectors/source.ts';
import { type SourceNode, StreamGraph } from '../graph/stream-graph.ts';
import { DataStream, type OperatorOptions } from './data-stream.ts';

/** Where a job's streams start (Flink's StreamExecutionEnvironment); the options live in the job definition. */
export class StreamExecutionEnvironment {
  /** @internal */
  readonly graph = new StreamGraph();

  fromSource<T>(source: Source<T>, options: OperatorOptions = {}): DataStream<T> {
    const node = this.graph.addNode<SourceNode>({
      kind: 'source',
      uid: options.uid ?? '',
      name: options.name ?? source.name,
      parallelism: options.parallelism,
      source: source as Source<unknown>,
    });
    return new DataStream<T>(this.graph, { nodes: [node], partitioning: 'forward', keySelector: undefined });
  }
}
