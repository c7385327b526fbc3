import type { Admin } from '@platformatic/kafka';
import { Command } from 'commander';
import { ClusterConnections } from '../../connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../../connectors/kafka/kafka-connection-options.ts';
import { resolveKafkaConnection } from '../../connectors/kafka/kafka-default-connection.ts';
import { hasKafkaError } from '../../connectors/kafka/kafka-error-ids.ts';
import { loadAdmin } from '../../connectors/kafka/kafka-protocol.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import { EARLIEST_OFFSET, LATEST_OFFSET, listOffsets } from '../../connectors/kafka/partition-fetcher.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';

const TOPIC_RESOURCE = 2;
/** Settings given to the topic itself (not the broker's defaults). */
const DYNAMIC_TOPIC_CONFIG = 1;

/** The cluster a topic command talks to, with its admin client; both closed after `work`. */
async function withCluster<T>(options: KafkaSettingsOptions, what: string, work: (admin: Admin, connections: ClusterConnections) => Promise<T>): Promise<T> {
  useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
  const { bootstrap, connection } = resolveKafkaConnection({}, what);
  const admin = new (await loadAdmin())({ clientId: 'weir-topic', bootstrapBrokers: [formatBootstrap(bootstrap)], ...connection });
  const connections = new ClusterConnections(bootstrap, { clientId: 'weir-topic', ...connection });
  try {
    return await work(admin, connections);
  } finally {
    await admin.close().catch(() => {});
    await connections.close().catch(() => {});
  }
}

/** `key=value` of a --config option, collected. */
function configPair(value: string, previous: { name: string; value: string }[] = []): { name: string; value: string }[] {
  const equals = value.indexOf('=');
  if (equals <= 0)
    throw new WeirError('INVALID_CONFIG', `--config ${JSON.stringify(value)}: expected <name>=<value>`, { hint: 'e.g. --config cleanup.policy=compact' });
  return [...previous, { name: value.slice(0, equals), value: value.slice(equals + 1) }];
}

/**
 * `weir topic create|describe|list|delete`: the topics Weir's jobs read and write, without another
 * Kafka tool (the broker `weir kafka start` runs ships none, and creates no topic by itself).
 */
export function topicCommand(): Command {
  const topic = new Command('topic').description('create, describe, list and delete Kafka topics');

  addKafkaOptions(
    topic
      .command('create')
      .description('create a topic')
      .argument('<name>', 'the topic')
      .option('--partitions <n>', 'its partition count', positiveIntegerArgument, 1)
      .option('--replication-factor <n>', "its replica count (default: the broker's default.replication.factor)", positiveIntegerArgument)
      .option('--config <name=value>', 'a topic setting, e.g. cleanup.policy=compact or retention.ms=86400000 (repeatable)', configPair),
  ).action(
    async (name: string, options: KafkaSettingsOptions & { partitions: number; replicationFactor?: number; config?: { name: string; value: string }[] }) => {
      await withCluster(options, 'weir topic create', async (admin) => {
        try {
          await admin.createTopics({
            topics: [name],
            partitions: options.partitions,
            replicas: options.replicationFactor ?? -1,
            configs: options.config ?? [],
          });
        } catch (error) {
          if (hasKafkaError(error, 'TOPIC_ALREADY_EXISTS')) {
            throw new WeirError('INVALID_CONFIG', `topic "${name}" exists already`, { hint: '`weir topic describe` shows it; `weir topic delete` removes it' });
          }
          throw error;
        }
      });
      console.log(`created topic ${name} (${options.partitions} partition${options.partitions === 1 ? '' : 's'})`);
    },
  );

  addKafkaOptions(
    topic
      .command('describe')
      .description("a topic's partitions (leader, replicas, earliest and latest offsets) and settings")
      .argument('<name>', 'the topic')
      .option('--json', 'print JSON', false),
  ).action(async (name: string, options: KafkaSettingsOptions & { json: boolean }) => {
    const described = await withCluster(options, 'weir topic describe', async (admin, connections) => {
      const info = await connections.topic(name);
      const metadata = await connections.metadata([name]);
      const replicas = new Map((metadata.topics[0]?.partitions ?? []).map((partition) => [partition.partitionIndex, partition.replicaNodes]));
      const earliest = await listOffsets(connections, info, info.partitions, 'read_uncommitted', EARLIEST_OFFSET);
      const latest = await listOffsets(connections, info, info.partitions, 'read_uncommitted', LATEST_OFFSET);
      const stable = await listOffsets(connections, info, info.partitions, 'read_committed', LATEST_OFFSET);
      const [configs] = await admin.describeConfigs({ resources: [{ resourceType: TOPIC_RESOURCE, resourceName: name }] });
      return {
        topic: name,
        partitions: info.partitions.map((partition) => ({
          partition: partition.partition,
          leader: partition.leaderId,
          replicas: replicas.get(partition.partition) ?? [],
          earliestOffset: String(earliest.get(partition.partition)),
          latestOffset: String(latest.get(partition.partition)),
          lastStableOffset: String(stable.get(partition.partition)),
        })),
        settings: Object.fromEntries(
          (configs?.configs ?? []).filter((entry) => entry.configSource === DYNAMIC_TOPIC_CONFIG).map((entry) => [entry.name, entry.value]),
        ),
      };
    });
    if (options.json) {
      console.log(JSON.stringify(described, null, 2));
      return;
    }
    console.log(`topic ${described.topic}: ${described.partitions.length} partitions`);
    console.log('partition\tleader\treplicas\tearliest\tlatest\tlast stable');
    for (const p of described.partitions) {
      console.log(`${p.partition}\t${p.leader}\t${p.replicas.join(',')}\t${p.earliestOffset}\t${p.latestOffset}\t${p.lastStableOffset}`);
    }
    const settings = Object.entries(described.settings);
    console.log(settings.length === 0 ? 'settings: the broker defaults' : `settings: ${settings.map(([key, value]) => `${key}=${value}`).join(', ')}`);
  });

  addKafkaOptions(
    topic.command('list').description('the topics and their partition counts (not the internal ones)').option('--json', 'print JSON', false),
  ).action(async (options: KafkaSettingsOptions & { json: boolean }) => {
    const topics = await withCluster(options, 'weir topic list', async (_admin, connections) => {
      const metadata = await connections.metadata(null);
      return metadata.topics
        .filter((entry) => !entry.isInternal && typeof entry.name === 'string' && !entry.name.startsWith('__'))
        .map((entry) => ({ topic: entry.name as string, partitions: entry.partitions.length }))
        .sort((a, b) => a.topic.localeCompare(b.topic));
    });
    if (options.json) console.log(JSON.stringify(topics, null, 2));
    else for (const entry of topics) console.log(`${entry.topic}\t${entry.partitions}`);
  });

  addKafkaOptions(topic.command('delete').description('delete a topic and its records').argument('<name>', 'the topic')).action(
    async (name: string, options: KafkaSettingsOptions) => {
      await withCluster(options, 'weir topic delete', async (admin, connections) => {
        await connections.topic(name); // an unknown topic is one clear error naming it
        await admin.deleteTopics({ topics: [name] });
      });
      console.log(`deleted topic ${name}`);
    },
  );

  return topic;
}
