import type { MessageRecord } from '@platformatic/kafka';
import type { ClusterConnections } from './cluster-connections.ts';

/**
 * The leaders of the partitions a producer writes to, by "topic:partition", learnt from topic
 * metadata on first use and forgotten whenever a request needs a retry (a leader moved).
 */
export class PartitionLeaders {
  readonly #connections: ClusterConnections;
  readonly #leaders = new Map<string, number>();

  constructor(connections: ClusterConnections) {
    this.#connections = connections;
  }

  /** The records by the node id of their partition's leader, in their order. */
  async groupByLeader(records: MessageRecord[]): Promise<Map<number, MessageRecord[]>> {
    const byLeader = new Map<number, MessageRecord[]>();
    for (const record of records) {
      const key = `${record.topic}:${record.partition}`;
      let leader = this.#leaders.get(key);
      if (leader === undefined) {
        const info = await this.#connections.topic(record.topic);
        for (const entry of info.partitions) if (entry.leaderId >= 0) this.#leaders.set(`${record.topic}:${entry.partition}`, entry.leaderId);
        leader = this.#leaders.get(key);
        if (leader === undefined) throw Object.assign(new Error(`partition ${key} has no leader`), { apiId: 'LEADER_NOT_AVAILABLE' });
      }
      const group = byLeader.get(leader);
      if (group === undefined) byLeader.set(leader, [record]);
      else group.push(record);
    }
    return byLeader;
  }

  /**
   * A request that sends `group` (records of one leader) to `leader`, and, when it is retried
   * (after {@link forget}, e.g. on NOT_LEADER_OR_FOLLOWER), to the leaders the fresh metadata names,
   * regrouped: never to the old leader again.
   */
  sendToLeaders(leader: number, group: MessageRecord[], send: (leader: number, records: MessageRecord[]) => Promise<unknown>): () => Promise<unknown> {
    let first = true;
    return async () => {
      if (first) {
        first = false;
        return send(leader, group);
      }
      const byLeader = await this.groupByLeader(group);
      return Promise.all([...byLeader].map(([current, records]) => send(current, records)));
    };
  }

  forget(): void {
    this.#leaders.clear();
  }
}
