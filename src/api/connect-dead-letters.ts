import type { Sink } from '../core/connector/sink.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { DEAD_LETTER_TAG } from '../core/functions/dead-letter.ts';
import type { PendingDeadLetters, SinkNode, StreamGraph } from '../graph/stream-graph.ts';
import { addSink } from './stream-transformations.ts';

/**
 * Connects the dead letters of the job's sources and operators, once `build` has declared every
 * sink. Dead letters join the transactions of an exactly-once sink that takes them (the Kafka
 * sink): the one their policy names with `sink`, else the job's only one. They reach its second
 * input, so they are written in the same transactions as the output, aligned by the same barriers:
 * read_committed output plus dead letters equals the input at every moment, not only after each
 * checkpoint's commits. Otherwise (a policy with settings of its own, no such sink, or several)
 * they go to a dead-letter sink of their own, committed at the same checkpoints.
 */
export function connectDeadLetters(graph: StreamGraph): void {
  const pending = graph.pendingDeadLetters.splice(0);
  if (pending.length === 0) return;
  const candidates = graph.nodes.filter(
    (node): node is SinkNode => node.kind === 'sink' && node.sink.deliveryGuarantee === 'exactly-once' && node.sink.withDeadLetters !== undefined,
  );
  const joined = new Map<SinkNode, PendingDeadLetters[]>();
  for (const entry of pending) {
    const target = sinkToJoin(entry, candidates);
    if (target === undefined) {
      addSink(
        graph,
        { inputs: [{ node: graph.node(entry.owner), outputTag: DEAD_LETTER_TAG }], partitioning: 'forward', keySelector: undefined },
        entry.route.ownSink as Sink<unknown>,
        {
          ...(entry.uid === undefined ? {} : { uid: `${entry.uid}-dead-letters` }),
          name: entry.route.ownSink.name,
          ...(entry.parallelism === undefined ? {} : { parallelism: entry.parallelism }),
        },
      );
      continue;
    }
    joined.set(target, [...(joined.get(target) ?? []), entry]);
  }
  for (const [node, entries] of joined) {
    const withDeadLetters = node.sink.withDeadLetters as (topics: readonly string[]) => Sink<unknown>;
    node.sink = withDeadLetters(entries.map((entry) => entry.route.topic));
    // Input 1 of the sink: a channel of its own (never chained), aligned with the output by the barriers.
    for (const entry of entries) graph.addEdge({ source: entry.owner, target: node.id, partitioning: 'forward', inputIndex: 1, outputTag: DEAD_LETTER_TAG });
  }
}

function sinkToJoin(entry: PendingDeadLetters, candidates: SinkNode[]): SinkNode | undefined {
  const { joinSink, topic } = entry.route;
  if (joinSink === false) return undefined;
  if (joinSink === undefined) return candidates.length === 1 ? candidates[0] : undefined;
  const named = candidates.find((node) => node.uid === joinSink);
  if (named === undefined) {
    const uids = candidates.map((node) => node.uid).filter((uid) => uid !== '');
    throw new WeirError('INVALID_CONFIG', `deadLetter (topic "${topic}"): sink "${joinSink}" is not the uid of an exactly-once Kafka sink of the job`, {
      hint:
        uids.length > 0
          ? `name one of ${uids.map((uid) => `"${uid}"`).join(', ')}`
          : "give the job's exactly-once Kafka sink that uid (sinkTo(sink, { uid })), or drop sink to give the dead letters a sink of their own",
    });
  }
  return named;
}
