import type { ConnectionOptions } from '@platformatic/kafka';
import type { ClusterConnections, TopicInfo } from './cluster-connections.ts';
import { type BrokerAddress, formatBootstrap } from './kafka-connection-options.ts';
import { loadAdmin } from './kafka-protocol.ts';
import type { ParsedKafkaSourceOptions } from './kafka-source-options.ts';
import type { KafkaSplit } from './kafka-split.ts';
import { EARLIEST_OFFSET, LATEST_OFFSET, listOffsets } from './partition-fetcher.ts';

/** The source's settings that say where a split without an offset starts. */
export type StartingOffsetsSettings = Pick<ParsedKafkaSourceOptions<unknown>, 'startingOffsets' | 'groupId' | 'isolation'>;

/**
 * Gives every split without an offset (a fresh start, not a restore) the offset `startingOffsets`
 * names: earliest, latest, the consumer group's committed offset (or a fallback), the first at a
 * timestamp (or the end), or an explicit one (or a fallback). `topics` holds the metadata of
 * every split's topic.
 */
export async function resolveStartingOffsets(
  connections: ClusterConnections,
  topics: ReadonlyMap<string, TopicInfo>,
  splits: readonly KafkaSplit[],
  options: StartingOffsetsSettings,
  admin: { bootstrap: readonly BrokerAddress[]; connection: ConnectionOptions },
): Promise<void> {
  const unresolved = splits.filter((split) => split.offset === null);
  if (unresolved.length === 0) return;
  const starting = options.startingOffsets;
  let committed = new Map<string, bigint>();
  if (typeof starting === 'object' && 'committed' in starting) committed = await committedOffsets(options.groupId as string, admin); // parseKafkaSourceOptions requires groupId with { committed }
  for (const split of unresolved) {
    const info = topics.get(split.topic) as TopicInfo;
    const partitions = info.partitions.filter((entry) => entry.partition === split.partition);
    const list = async (timestamp: bigint) => (await listOffsets(connections, info, partitions, options.isolation, timestamp)).get(split.partition) as bigint;
    const key = `${split.topic}:${split.partition}`;
    if (starting === 'earliest') split.offset = await list(EARLIEST_OFFSET);
    else if (starting === 'latest') split.offset = await list(LATEST_OFFSET);
    else if ('committed' in starting)
      split.offset = committed.get(key) ?? (await list(starting.committed.fallback === 'latest' ? LATEST_OFFSET : EARLIEST_OFFSET));
    else if ('timestamp' in starting) {
      const offset = await list(BigInt(starting.timestamp));
      split.offset = offset >= 0n ? offset : await list(LATEST_OFFSET); // no record that late: start at the end
    } else {
      const explicit = starting.offsets[key];
      split.offset = explicit !== undefined ? BigInt(explicit) : await list(starting.fallback === 'latest' ? LATEST_OFFSET : EARLIEST_OFFSET);
    }
  }
}

/** The group's committed offsets by "topic:partition". */
async function committedOffsets(
  groupId: string,
  { bootstrap, connection }: { bootstrap: readonly BrokerAddress[]; connection: ConnectionOptions },
): Promise<Map<string, bigint>> {
  const admin = new (await loadAdmin())({ clientId: 'weir-source-offsets', bootstrapBrokers: [formatBootstrap(bootstrap)], ...connection });
  try {
    const groups = await admin.listConsumerGroupOffsets({ groups: [groupId] });
    const offsets = new Map<string, bigint>();
    for (const group of groups) {
      for (const topic of group.topics) {
        for (const partition of topic.partitions)
          if (partition.committedOffset >= 0n) offsets.set(`${topic.name}:${partition.partitionIndex}`, partition.committedOffset);
      }
    }
    return offsets;
  } finally {
    await admin.close().catch(() => {});
  }
}
