import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConnectionOptions } from '@platformatic/kafka';
import { Command, Option } from 'commander';
import { planCluster } from '../../cluster/cluster-plan.ts';
import { readClusterStatus } from '../../cluster/cluster-status.ts';
import { checkClusterTopics, existingPartitionCount } from '../../cluster/cluster-topics.ts';
import { ClusterConnections } from '../../connectors/kafka/cluster-connections.ts';
import { describeCluster } from '../../connectors/kafka/cluster-info.ts';
import { type BrokerAddress, formatBootstrap } from '../../connectors/kafka/kafka-connection-options.ts';
import { resolveKafkaConnection } from '../../connectors/kafka/kafka-default-connection.ts';
import { brokerTransactionMaxTimeout } from '../../connectors/kafka/kafka-preflight.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import { TransactionDriver } from '../../connectors/kafka/transaction-driver.ts';
import { parseEnvironmentConfig } from '../../core/config/environment-config.ts';
import type { Preflightable } from '../../core/connector/preflight.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { formatDuration } from '../../core/time/duration.ts';
import { buildStreamGraph } from '../../graph/job.ts';
import { buildJobGraph } from '../../graph/job-graph.ts';
import { loadJobModule } from '../../runtime/deployment/job-module.ts';
import { loadJob } from '../../runtime/jobmaster/load-job.ts';
import { runPreflight } from '../../runtime/jobmaster/run-preflight.ts';
import { positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, useKafkaSettings } from '../kafka-options.ts';
import { checkPrefixTransactions } from './doctor-prefix.ts';

/** What `weir doctor` is given. */
type DoctorOptions = KafkaSettingsOptions & {
  job?: string;
  prefix?: string;
  abort: boolean;
  checkpointStorage?: string;
  fresh: boolean;
  cluster?: string;
  keyedTasks?: number;
};

/**
 * `weir doctor`: the broker and its transaction settings, a job's preflight, and the transactions
 * left open under a transactional id prefix (a crashed job's), which `--abort` ends as the job's
 * next start would: it commits what the latest checkpoint holds and aborts the rest, so it needs the
 * job's checkpoint storage (doctor-prefix.ts). Exits 1 when it finds a problem it did not fix.
 */
export function doctorCommand(): Command {
  return addKafkaOptions(new Command('doctor'))
    .description(
      "check the broker, a job's exactly-once prerequisites, and lingering transactions (with --abort, end them as the job's next start would); exits 1 on a problem left",
    )
    .option('--job <module>', "also run the job's preflight: checkpointing, transaction timeouts, topics, isolation levels")
    .option(
      '--prefix <prefix>',
      "the transactional id prefix of a stopped job's sink: lists its open transactions (ids <prefix>-<subtask>-<slot> exactly, not those of a longer prefix), marking those its latest checkpoint holds when its checkpoint storage is known",
    )
    .option(
      '--abort',
      "end the open transactions found under --prefix as the job's next start would: commit those its latest checkpoint holds (pre-committed before a crash), abort the rest; needs --checkpoint-storage (or --job naming it), whose lock it takes (the job must be stopped), or --fresh",
      false,
    )
    .option(
      '--checkpoint-storage <folder-or-s3-url>',
      "the stopped job's checkpointing.storage, for --prefix: which open transactions its latest checkpoint holds (default: the --job's own setting)",
    )
    .option(
      '--fresh',
      'with --abort: abort every open transaction under --prefix, those a checkpoint holds too (their records are lost): only for a job that will start --fresh',
      false,
    )
    .option('--cluster <id>', "check a cluster-mode job: its group and members, and with --job its topics (names, partition counts) against the job's plan")
    .addOption(
      new Option(
        '--keyed-tasks <n>',
        "with --cluster and --job: the cluster.keyedTasks its members run with (default: what the cluster's topics hold, else the most partitions of a source, at most maxParallelism)",
      ).argParser(positiveIntegerArgument),
    )
    .action(async (options: DoctorOptions) => {
      // The job's connectors (its preflight) take the same settings, unless they set their own.
      useKafkaSettings(options, (line) => console.log(line));
      const { bootstrap, connection } = resolveKafkaConnection({}, 'weir doctor');
      const problems: string[] = [];
      let checkpointStorage = options.checkpointStorage;
      const info = await describeCluster(bootstrap, undefined, connection);
      const maxTimeout = await brokerTransactionMaxTimeout(bootstrap, connection);
      console.log(
        `broker: reachable at ${formatBootstrap(bootstrap)} (cluster ${info.clusterId}, ${info.brokers.length} broker${info.brokers.length === 1 ? '' : 's'})`,
      );
      console.log(`transaction.version: ${info.transactionVersion} (Weir's sink pins the classic protocol, which works with 0, 1 and 2)`);
      console.log(`transaction.max.timeout.ms: ${maxTimeout} (${formatDuration(maxTimeout)})`);

      if (options.cluster !== undefined) problems.push(...(await checkCluster(options.cluster, options.job, options.keyedTasks, bootstrap, connection)));
      else if (options.job !== undefined) {
        const job = await loadJobModule(pathToFileURL(resolve(options.job)).href);
        const config = parseEnvironmentConfig(job.config);
        checkpointStorage ??= config.checkpointing?.storage;
        const streamGraph = buildStreamGraph(job);
        const jobGraph = buildJobGraph(job.name, streamGraph, config);
        const findings = await runPreflight(job.name, streamGraph, jobGraph, config);
        console.log(`job "${job.name}": ${findings.length === 0 ? 'preflight passed' : `${findings.length} finding(s)`}`);
        // What --prefix takes for each sink (the default prefix carries a hash for some names).
        for (const node of streamGraph.nodes) {
          if (node.kind !== 'sink') continue;
          const uid = jobGraph.nodes[node.id]?.uid ?? node.uid;
          for (const claim of (node.sink as Preflightable).exclusiveClaims?.({ jobName: job.name, uid }) ?? []) {
            console.log(`  ${node.name}: ${claim.what} "${claim.name}"`);
          }
        }
        for (const finding of findings) {
          console.log(`  ${finding.level}: ${finding.message}${finding.hint ? `\n    fix: ${finding.hint}` : ''}`);
          if (finding.level === 'error') problems.push(finding.message);
        }
      }

      if (options.prefix !== undefined) {
        const connections = new ClusterConnections(bootstrap, { clientId: 'weir-doctor', ...connection });
        try {
          const driver = new TransactionDriver(connections, { transactionTimeoutMs: maxTimeout });
          const { prefix, abort, fresh } = options;
          problems.push(...(await checkPrefixTransactions(driver, { prefix, abort, fresh, checkpointStorage }, (line) => console.log(line))));
        } finally {
          await connections.close();
        }
      } else if (options.abort) {
        throw new WeirError('DOCTOR_NO_PREFIX', '--abort needs --prefix: the transactional id prefix of the job whose transactions to abort', {
          hint: "pass the sink's transactionalIdPrefix, or its default prefix as `weir doctor --job <module>` prints it",
        });
      }

      if (problems.length > 0) {
        throw new WeirError('DOCTOR_FOUND_PROBLEMS', `${problems.length} problem(s): ${problems.join('; ')}`, {
          hint: "fix the findings above; open transactions of a stopped job: weir doctor --prefix <prefix> --abort --checkpoint-storage <the job's checkpointing.storage>",
        });
      }
      console.log('OK');
    });
}

/** `weir doctor --cluster <id>`: the group and its members, and with the job its topics against the job's plan. */
async function checkCluster(
  cluster: string,
  job: string | undefined,
  keyedTasks: number | undefined,
  bootstrap: BrokerAddress[],
  connection: ConnectionOptions,
): Promise<string[]> {
  const problems: string[] = [];
  const connections = new ClusterConnections(bootstrap, { clientId: 'weir-doctor', ...connection });
  try {
    const status = await readClusterStatus(connections, bootstrap, cluster);
    const checkpointed = status.tasks.filter((task) => task.checkpointId !== undefined).length;
    console.log(`cluster "${cluster}": group ${status.state}, ${status.members.length} members, ${checkpointed} of ${status.tasks.length} tasks checkpointed`);
    if (job === undefined) return problems;
    const loaded = await loadJob({ job, config: { cluster: { id: cluster, ...(keyedTasks === undefined ? {} : { keyedTasks }) } } });
    const { topics, taskCounts, plan } = await planCluster(loaded, cluster, loaded.config.cluster?.keyedTasks, (topic) =>
      existingPartitionCount(connections, topic),
    );
    for (const stage of plan.stages) console.log(`  stage "${stage.uid}": ${taskCounts[stage.id]} tasks`);
    for (const { topic, state, partitions } of await checkClusterTopics(connections, topics)) {
      const line = `  ${topic.what}: topic ${topic.topic}, ${topic.partitions} partitions`;
      if (state === 'ok') console.log(`${line}: ok`);
      else if (state === 'missing') console.log(`${line}: missing (the first member to start creates it)`);
      else {
        console.log(`${line}: it has ${partitions}: refused (a task count is fixed for the job's life)`);
        problems.push(`${topic.what}, topic ${topic.topic}, has ${partitions} partitions; the job needs ${topic.partitions}`);
      }
    }
    return problems;
  } finally {
    await connections.close();
  }
}
