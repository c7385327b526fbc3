import { WeirError } from '../core/errors/weir-error.ts';
import type { KeySelector } from '../core/functions/key-selector.ts';
import type { KeyLike } from '../core/state/state-key.ts';
import type { StreamGraph, StreamNode } from '../graph/stream-graph.ts';
import { compositeKeySelector } from '../state/composite-key.ts';
import type { DataStream, KeyedStream } from './data-stream.ts';
import type { DataStreamImpl } from './data-stream-impl.ts';

/**
 * Flink's DataStreamUtils. `reinterpretAsKeyedStream(stream, key)` treats a stream that is already
 * partitioned by `key` as keyed, without an exchange: the keyed operators after it keep their state
 * by key group where the records are.
 *
 * The contract (Flink's): every record must already be at the subtask that owns its key's key
 * group, in every run and at every parallelism. It holds in two cases, and Weir checks every record
 * (a record of a key group its subtask does not own fails the task with KEY_NOT_PARTITIONED):
 *
 * - After a keyBy, through operators that keep the key and the parallelism (map, filter, a process
 *   function): `DataStreamUtils.reinterpretAsKeyedStream(keyed.map(enrich), (r) => r.account)`.
 * - Straight from a Kafka topic whose partition p holds key group p: as many partitions as the
 *   job's maxParallelism, written with `partitioner: keyGroupPartitioner` (or a partition of
 *   `keyGroupOf(key, partitions)`). The source then gives partition p to the subtask that owns key
 *   group p, on every start and rescale, so a key's state moves with its partition; a topic with
 *   another partition count is refused when the job starts.
 */
export const DataStreamUtils = {
  reinterpretAsKeyedStream<T, K extends KeyLike>(stream: DataStream<T>, keySelector: (value: T) => K): KeyedStream<T, K> {
    if (typeof keySelector !== 'function') {
      throw new WeirError('INVALID_CONFIG', 'reinterpretAsKeyedStream: the key selector must be a function', { hint: 'pass (record) => record.key' });
    }
    const impl = stream as DataStreamImpl<T>;
    markSources(
      impl.graph,
      impl.upstream.inputs.map((input) => input.node),
    );
    return impl.factory.keyedStream<T, K>({
      ...impl.upstream,
      partitioning: 'forward',
      keySelector: compositeKeySelector(keySelector) as KeySelector<unknown>,
      reinterpreted: true,
    });
  },
};

/**
 * The sources the reinterpreted stream comes from through forward edges alone (no keyBy between):
 * their splits are assigned by key group. Past a keyBy the exchange already partitions by key.
 */
function markSources(graph: StreamGraph, nodes: StreamNode[]): void {
  const pending = [...nodes];
  while (pending.length > 0) {
    const node = pending.pop() as StreamNode;
    if (node.kind === 'source') {
      if (node.source.keyGroupOfSplit === undefined) {
        throw new WeirError('INVALID_CONFIG', `reinterpretAsKeyedStream: source "${node.name}" cannot say which key group each of its splits holds`, {
          hint: 'reinterpret a Kafka source (its partition p holds key group p) or a stream after keyBy; or use keyBy',
        });
      }
      node.keyGroupAssignment = true;
      continue;
    }
    for (const edge of graph.inputsOf(node.id)) if (edge.partitioning === 'forward') pending.push(graph.node(edge.source));
  }
}
