import type { DeadLetterRoute } from '../core/connector/dead-letter-route.ts';
import type { Sink } from '../core/connector/sink.ts';
import type { Source } from '../core/connector/source.ts';
import type { WatermarkStrategy } from '../core/event-time/watermark-strategy.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';

/** How records move from one operator's subtasks to the next's (Flink's StreamPartitioner). */
export type Partitioning = 'forward' | 'hash' | 'rebalance' | 'broadcast';

export interface StreamEdge {
  source: number;
  target: number;
  partitioning: Partitioning;
  /** For `hash`: the key of each record, hashed to a key group. */
  keySelector?: KeySelector<unknown> | undefined;
  /** Which input of a two-input target this edge feeds (0 or 1; one-input targets: 0). */
  inputIndex?: number | undefined;
  /** The side output of the source node this edge carries (an OutputTag's id); undefined: its main output. */
  outputTag?: string | undefined;
}

interface StreamNodeBase {
  id: number;
  /** Stable identity of the operator's state across job versions. */
  uid: string;
  name: string;
  /** undefined: the environment's parallelism. */
  parallelism: number | undefined;
}

export interface SourceNode extends StreamNodeBase {
  kind: 'source';
  source: Source<unknown>;
  /** Event time: how records get timestamps and the stream gets watermarks. */
  watermarkStrategy?: WatermarkStrategy<unknown> | undefined;
  /**
   * Its stream is reinterpreted as keyed (reinterpretAsKeyedStream): split i holds key group
   * `source.keyGroupOfSplit(i)` and goes to the subtask that owns that key group, at every start.
   */
  keyGroupAssignment?: boolean | undefined;
}

export interface OperatorNode extends StreamNodeBase {
  kind: 'operator';
  createOperator: () => StreamOperator<unknown, unknown>;
  /** For keyed operators: the key of each input record (the same selector the hash exchange used). */
  keySelector: KeySelector<unknown> | undefined;
  /** Two inputs (connect, joins): edges say which with `inputIndex`. */
  twoInput?: boolean | undefined;
  /**
   * The operator works in event time and needs watermarks from every source upstream; the text
   * says what it is, for the error when one has none (e.g. "an event-time window").
   */
  needsWatermarks?: string | undefined;
  /** Keyed without an exchange (reinterpretAsKeyedStream): its input must already be partitioned as keyBy would. */
  reinterpretedKeyed?: boolean | undefined;
}

export interface SinkNode extends StreamNodeBase {
  kind: 'sink';
  sink: Sink<unknown>;
}

export type StreamNode = SourceNode | OperatorNode | SinkNode;

/** A source's or operator's dead letters, connected to a sink when the job's graph is complete (its sinks known). */
export interface PendingDeadLetters {
  owner: number;
  route: DeadLetterRoute;
  /** The owner's uid and parallelism, for a dead-letter sink of their own. */
  uid: string | undefined;
  parallelism: number | undefined;
}

type DistributiveOmitId<N> = N extends unknown ? Omit<N, 'id'> : never;

/**
 * The logical plan a job's `build` function produces: operators and the edges between them, in
 * the order they were declared. Every worker thread builds the same graph from the same job
 * module, so node ids line up everywhere and functions never cross threads.
 */
export class StreamGraph {
  readonly nodes: StreamNode[] = [];
  readonly edges: StreamEdge[] = [];
  readonly pendingDeadLetters: PendingDeadLetters[] = [];

  addNode<N extends StreamNode>(node: DistributiveOmitId<N>): N {
    const full = { ...node, id: this.nodes.length } as unknown as N;
    this.nodes.push(full);
    return full;
  }

  addEdge(edge: StreamEdge): void {
    this.edges.push(edge);
  }

  node(id: number): StreamNode {
    const node = this.nodes[id];
    if (node === undefined) throw new Error(`no stream node ${id}`);
    return node;
  }

  inputsOf(id: number): StreamEdge[] {
    return this.edges.filter((edge) => edge.target === id);
  }

  outputsOf(id: number): StreamEdge[] {
    return this.edges.filter((edge) => edge.source === id);
  }
}
