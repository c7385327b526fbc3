import type { Source } from '../core/connector/source.ts';
import type { WatermarkStrategy } from '../core/event-time/watermark-strategy.ts';
import { type SourceNode, StreamGraph } from '../graph/stream-graph.ts';
import { DataStream, type OperatorOptions } from './data-stream.ts';

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

  fromSource<T>(source: Source<T>, options: SourceOptions<NoInfer<T>> = {}): DataStream<T> {
    const node = this.graph.addNode<SourceNode>({
      kind: 'source',
      uid: options.uid ?? '',
      name: options.name ?? source.name,
      parallelism: options.parallelism,
      source: source as Source<unknown>,
      watermarkStrategy: options.watermarkStrategy as WatermarkStrategy<unknown> | undefined,
    });
    return new DataStream<T>(this.graph, { inputs: [{ node }], partitioning: 'forward', keySelector: undefined });
  }
}
