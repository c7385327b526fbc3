import { type MessageRecord, produceV11 } from '@platformatic/kafka';
import type { ClusterConnections } from './cluster-connections.ts';
import { PartitionLeaders } from './partition-leaders.ts';
import { chunksBelowBatchLimit } from './record-chunks.ts';
import { retryKafkaRequest } from './retry-kafka-request.ts';

export interface PlainProducerOptions {
  /** How long a request may be retried on retriable errors (leader moves, broker restarts) before failing. */
  retryTimeoutMs?: number;
}

/**
 * Writes records outside any transaction (the sink's at-least-once and none), at the protocol
 * level with the pinned Produce v11, the way the transaction driver writes inside one: one produce
 * request per leader and chunk below the batch limit, retried on retriable errors.
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
    for (const chunk of chunksBelowBatchLimit(records)) {
      const byLeader = await retryKafkaRequest(
        'Metadata for the leaders',
        () => this.#leaders.groupByLeader(chunk),
        this.#retryTimeoutMs,
        this.#forgetLeaders,
        this.#connections,
      );
      await Promise.all(
        [...byLeader].map(([leader, group]) =>
          retryKafkaRequest(
            'Produce',
            // A retry goes to the leaders of now (after NOT_LEADER_OR_FOLLOWER, not to the old one again).
            this.#leaders.sendToLeaders(leader, group, async (current, records) =>
              produceV11.api.async(await this.#connections.node(current), acks, 30_000, records, {}),
            ),
            this.#retryTimeoutMs,
            this.#forgetLeaders,
            this.#connections,
          ),
        ),
      );
    }
  }
}
