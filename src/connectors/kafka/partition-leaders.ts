import type { ClusterConnections } from './cluster-connections.ts';

/** What goes to a partition's leader: a record, or a partition's encoded batch. */
export interface Routed {
  readonly topic: string;
  readonly partition?: number;
}

/**
 * The leaders of the partitions a producer writes to, by "topic:partition", learnt from topic
 * metadata on first use and forgotten whenever a request needs a retry (a leader moved).
 */
export class PartitionLeaders {
  readonly #connections: ClusterConnections;
  /** Per topic, the leader's node id by partition. */
  readonly #leaders = new Map<string, number[]>();

  constructor(connections: ClusterConnections) {
    this.#connections = connections;
  }

  /**
   * The records (or encoded batches) by the node id of their partition's leader, in their order
   * (all of them, the same array, when they share one leader).
   */
  async groupByLeader<R extends Routed>(records: readonly R[]): Promise<Map<number, R[]>> {
    const leaders = new Array<number>(records.length);
    let single = true;
    for (let i = 0; i < records.length; i++) {
      const record = records[i] as R;
      const partition = record.partition as number;
      let leader = this.#leaders.get(record.topic)?.[partition];
      if (leader === undefined) {
        const info = await this.#connections.topic(record.topic);
        const byPartition: number[] = [];
        for (const entry of info.partitions) if (entry.leaderId >= 0) byPartition[entry.partition] = entry.leaderId;
        this.#leaders.set(record.topic, byPartition);
        leader = byPartition[partition];
        if (leader === undefined) throw Object.assign(new Error(`partition ${record.topic}:${partition} has no leader`), { apiId: 'LEADER_NOT_AVAILABLE' });
      }
      leaders[i] = leader;
      if (leader !== leaders[0]) single = false;
    }
    if (single) return records.length === 0 ? new Map() : new Map([[leaders[0] as number, records as R[]]]);
    const byLeader = new Map<number, R[]>();
    for (let i = 0; i < records.length; i++) {
      const leader = leaders[i] as number;
      const group = byLeader.get(leader);
      if (group === undefined) byLeader.set(leader, [records[i] as R]);
      else group.push(records[i] as R);
    }
    return byLeader;
  }

  /**
   * A request that sends `group` (records or batches of one leader) to `leader`, and, when it is retried
   * (after {@link forget}, e.g. on NOT_LEADER_OR_FOLLOWER), to the leaders the fresh metadata names,
   * regrouped: never to the old leader again.
   */
  sendToLeaders<R extends Routed>(leader: number, group: R[], send: (leader: number, records: R[]) => Promise<unknown>): () => Promise<unknown> {
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
