import { Command } from 'commander';
import { readClusterStatus } from '../../cluster/cluster-status.ts';
import { ClusterConnections } from '../../connectors/kafka/cluster-connections.ts';
import { resolveKafkaConnection } from '../../connectors/kafka/kafka-default-connection.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';

const age = (at: number | undefined) => (at === undefined ? '-' : `${((Date.now() - at) / 1000).toFixed(1)}s ago`);

/** `weir cluster status <id>`: a cluster-mode job's members, tasks, checkpoints and lag, read from Kafka (works from any machine). */
export function clusterCommand(): Command {
  const cluster = new Command('cluster').description('cluster mode (weir run --cluster): what runs where, read from Kafka');
  addKafkaOptions(
    cluster
      .command('status')
      .description("a cluster's members, the tasks each owns, each task's last checkpoint and lag (from the group and the job's topics)")
      .argument('<id>', 'the cluster id the members run with (--cluster)')
      .option('--json', 'print it as JSON', false),
  ).action(async (id: string, options: KafkaSettingsOptions & { json: boolean }) => {
    useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
    const { bootstrap, connection } = resolveKafkaConnection({}, 'weir cluster status');
    const connections = new ClusterConnections(bootstrap, { clientId: 'weir-cluster-status', ...connection });
    try {
      const status = await readClusterStatus(connections, bootstrap, id);
      if (options.json) {
        console.log(JSON.stringify(status, null, 2));
        return;
      }
      console.log(
        `cluster "${id}": group ${status.state}, generation ${status.generation ?? '-'}, ${status.members.length} members, ${status.tasks.length} tasks`,
      );
      for (const member of status.members) console.log(`  member ${member.id} (${member.clientHost}): ${member.tasks.length} tasks`);
      console.log('  task                          owner                 checkpoint  completed     lag');
      for (const task of status.tasks) {
        console.log(
          `  ${task.name.padEnd(30)}${(task.owner ?? '-').slice(0, 20).padEnd(22)}${String(task.checkpointId ?? '-').padEnd(12)}${age(task.completedAt).padEnd(14)}${task.lag ?? '-'}`,
        );
      }
    } finally {
      await connections.close();
    }
  });
  return cluster;
}
