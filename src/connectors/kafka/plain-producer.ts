import type { MessageRecord } from '@platformatic/kafka';
import type { ClusterConnections } from './cluster-connections.ts';
import { PartitionLeaders } from './partition-leaders.ts';
import { produceRequest } from './produce-request.ts';
import { BATCH_BYTES_LIMIT, RecordAccumulator } from './record-accumulator.ts';
import type { EncodedBatch } from './record-batch-builder.ts';
import { retryKafkaRequest } from './retry-kafka-request.ts';

export interface PlainProducerOptions {
  /** How long a request may be retried on retriable errors (leader moves, broker restarts) before failing. */
  retryTimeoutMs?: number;
}

/**
 * Writes records outside any transaction (the sink's at-least-once and none), at the protocol
 * level with the pinned Produce v11, the way the transaction driver writes inside one: the records
 * encoded into their partitions' batches, then one produce request per leader for each
 * BATCH_BYTES_LIMIT of batches, retried on retriable errors.
 */
export class PlainProducer {
  readonly #connections: ClusterConnections;
  readonly #retryTimeoutMs: number;
  readonly #leaders: PartitionLeaders;
  readonly #forgetLeaders = () => this.#leaders.forget();

  constructor(connections: ClusterConnections, options: PlainProducerOptions = {}) {
    this.#connections = connections;
    this.#retryTimeoutMs = options.retryTimeoutMs ?? 60_000;
    this.#leaders = new PartitionLeaders(connections);
  }

  /** Writes records (each with its topic and partition): acks -1 waits for every in-sync replica, 1 for the leader. */
  async send(records: MessageRecord[], acks: -1 | 1): Promise<void> {
    const accumulator = new RecordAccumulator();
    accumulator.append(records);
    while (accumulator.bytes > 0) {
      const batches = accumulator.take(BATCH_BYTES_LIMIT, {});
      const byLeader = await retryKafkaRequest(
        'Metadata for the leaders',
        () => this.#leaders.groupByLeader(batches),
        this.#retryTimeoutMs,
        this.#forgetLeaders,
        this.#connections,
      );
      await Promise.all([...byLeader].map(([leader, group]) => this.#sendGroup(leader, group, acks)));
    }
  }

  /**
   * One leader's share (its partitions' encoded batches), retried until it is written. A retry
   * resends only the batches of the partitions that failed (a Produce can succeed for some partitions and fail for others, say
   * while a new topic's leaders are elected): resending the rest would write them twice. When the
   * answer is unknown (no response: a timeout, a dropped connection) everything is resent, which
   * is what at-least-once means.
   */
  async #sendGroup(leader: number, group: EncodedBatch[], acks: -1 | 1): Promise<void> {
    let pending = group;
    let first = true;
    await retryKafkaRequest(
      'Produce',
      async () => {
        // A retry goes to the leaders of now (after NOT_LEADER_OR_FOLLOWER, not to the old one again).
        const byLeader = first ? new Map([[leader, pending]]) : await this.#leaders.groupByLeader(pending);
        first = false;
        const failed: EncodedBatch[] = [];
        let failure: unknown;
        await Promise.all(
          [...byLeader].map(async ([current, batches]) => {
            try {
              await produceRequest.async(await this.#connections.node(current), acks, 30_000, batches, undefined);
            } catch (error) {
              failure = error;
              const bad = failedPartitions(error);
              failed.push(...(bad === undefined ? batches : batches.filter((batch) => bad.has(`${batch.topic}:${batch.partition}`))));
            }
          }),
        );
        pending = failed;
        if (failure !== undefined) throw failure;
      },
      this.#retryTimeoutMs,
      this.#forgetLeaders,
      this.#connections,
    );
  }
}

/** The partitions a Produce response names with an error ("topic:partition"); undefined when there is no response to read. */
function failedPartitions(error: unknown): Set<string> | undefined {
  const response = (error as { response?: { responses?: { name: string; partitionResponses: { index: number; errorCode: number }[] }[] } }).response;
  if (response?.responses === undefined) return undefined;
  const failed = new Set<string>();
  for (const topic of response.responses) {
    for (const partition of topic.partitionResponses) if (partition.errorCode !== 0) failed.add(`${topic.name}:${partition.index}`);
  }
  return failed;
}
