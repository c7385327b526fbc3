import { deadLetterRoute, type OnRecordError, onRecordErrorSchema, recordErrorPolicy } from '../connectors/kafka/dead-letter-sink.ts';
import type { DeadLetterRoute } from '../core/connector/dead-letter-route.ts';
import type { Sink } from '../core/connector/sink.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { RecordErrorPolicy } from '../core/functions/dead-letter.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import type { OperatorNode, Partitioning, SinkNode, StreamGraph, StreamNode } from '../graph/stream-graph.ts';

/** Per-operator settings. A `uid` keeps the operator's state across changes of the job: set it on every stateful operator. */
export interface OperatorOptions {
  name?: string;
  uid?: string;
  parallelism?: number;
}

/**
 * The settings of an operator that runs a user function (map, filter, flatMap, process, keyed
 * process and its timers, reduce, windows, joins): an operator's, plus what a record, timer or
 * window firing the function throws on does.
 */
export interface ProcessingOptions extends OperatorOptions {
  /**
   * A record the function throws on (Kafka Streams' ProcessingExceptionHandler): 'fail' (default:
   * the task fails, naming the operator, the record and the job's line), 'skip' (dropped, counted
   * in recordsSkipped), or { deadLetter: { topic } } (sent to that Kafka topic, exactly-once with
   * the job's checkpoints, counted in deadLetters).
   */
  onError?: OnRecordError;
}

/** The runtime policy of an operator's `onError`, checked: one clear error for a bad value. */
export function errorPolicyOf(options: ProcessingOptions, kind: string): RecordErrorPolicy {
  if (options.onError === undefined) return 'fail';
  const parsed = onRecordErrorSchema(`${kind} onError`).safeParse(options.onError);
  if (!parsed.success) {
    throw new WeirError(
      'INVALID_CONFIG',
      `operator "${options.name ?? kind}" onError: must be 'fail', 'skip' or { deadLetter: { topic, bootstrap?, connection?, deliveryGuarantee?, transactionalIdPrefix? } }, not ${JSON.stringify(options.onError)}`,
      { hint: "use onError: 'skip' or onError: { deadLetter: { topic: 'my-dead-letters' } }" },
    );
  }
  return recordErrorPolicy(options.onError);
}

/** Notes the dead letters of a source or operator; {@link connectDeadLetters} connects them once the job's sinks are known. */
export function addDeadLetters(graph: StreamGraph, owner: StreamNode, route: DeadLetterRoute, options: OperatorOptions): void {
  graph.pendingDeadLetters.push({ owner: owner.id, route, uid: options.uid, parallelism: options.parallelism });
}

/** Notes the dead letters of an operator whose `onError` is { deadLetter }. */
export function addOperatorDeadLetters(graph: StreamGraph, output: Upstream, options: ProcessingOptions): void {
  const onError = options.onError;
  if (typeof onError !== 'object' || onError === null) return;
  addDeadLetters(graph, (output.inputs[0] as StreamInput).node, deadLetterRoute(onError.deadLetter), options);
}

/** One stream feeding an operator: a node's main output, or one of its side outputs. */
export interface StreamInput {
  node: StreamNode;
  outputTag?: string | undefined;
}

/** How a stream reaches the next operator: the outputs it is made of, and how they are partitioned. */
export interface Upstream {
  inputs: StreamInput[];
  partitioning: Partitioning;
  keySelector: KeySelector<unknown> | undefined;
  /** Keyed without an exchange (reinterpretAsKeyedStream). */
  reinterpreted?: boolean | undefined;
}

/** What an operator node is made of, for {@link addOperator}. */
export interface OperatorSpec {
  kind: string;
  createOperator: () => StreamOperator<unknown, unknown>;
  options: OperatorOptions;
  /** The key of each record, for keyed operators (one input). */
  keySelector?: KeySelector<unknown> | undefined;
  needsWatermarks?: string | undefined;
}

/** The main output of a node, as the next operator's upstream. */
export function outputOf(node: StreamNode): Upstream {
  return { inputs: [{ node }], partitioning: 'forward', keySelector: undefined, reinterpreted: undefined };
}

/**
 * Adds an operator fed by one or two upstreams (two: input 0 and input 1) to the graph (Flink's
 * transformations), and returns its output.
 */
export function addOperator(graph: StreamGraph, upstreams: Upstream[], spec: OperatorSpec): Upstream {
  const node = graph.addNode<OperatorNode>({
    kind: 'operator',
    uid: spec.options.uid ?? '',
    name: spec.options.name ?? spec.kind,
    parallelism: spec.options.parallelism,
    createOperator: spec.createOperator,
    keySelector: spec.keySelector,
    twoInput: upstreams.length === 2,
    needsWatermarks: spec.needsWatermarks,
    reinterpretedKeyed: upstreams.some((upstream) => upstream.reinterpreted === true && upstream.keySelector !== undefined),
  });
  upstreams.forEach((upstream, inputIndex) => {
    connectTo(graph, upstream, node, inputIndex);
  });
  return outputOf(node);
}

/** Adds a sink fed by `upstream`. */
export function addSink(graph: StreamGraph, upstream: Upstream, sink: Sink<unknown>, options: OperatorOptions): void {
  const node = graph.addNode<SinkNode>({
    kind: 'sink',
    uid: options.uid ?? '',
    name: options.name ?? sink.name,
    parallelism: options.parallelism,
    sink,
  });
  connectTo(graph, upstream, node, 0);
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
