import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { WeirError } from '../../core/errors/weir-error.ts';
import { formatDuration } from '../../core/time/duration.ts';
import { resolveKafkaDistribution } from '../../local-kafka/kafka-classpath.ts';
import {
  bootstrapOf,
  brokerOnPort,
  DEFAULT_DATA_DIR,
  DEFAULT_PORT,
  localBrokerStatus,
  startLocalBroker,
  stopLocalBroker,
} from '../../local-kafka/local-broker.ts';
import { durationArgument, portArgument } from '../arguments.ts';

const progress = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

export function kafkaCommand(): Command {
  const kafka = new Command('kafka').description('run a real single-node Apache Kafka broker (KRaft) on 127.0.0.1 for development and tests');
  const dataDirOption = () => new Option('--data-dir <folder>', "the broker's data folder").default(DEFAULT_DATA_DIR);

  kafka
    .command('start')
    .description('fetch Apache Kafka through Maven (first use), format a KRaft broker+controller and start it in the background')
    .addOption(dataDirOption())
    .addOption(new Option('--port <port>', "the broker's port on 127.0.0.1").argParser(portArgument).default(DEFAULT_PORT))
    .addOption(
      new Option('--controller-port <port>', "the KRaft controller's port (default: a free port, kept for the life of the data folder)").argParser(
        portArgument,
      ),
    )
    .addOption(
      new Option('--transaction-version <level>', 'the transaction.version feature to format with: 1 (classic) or 2 (KIP-890); default 2').choices(['1', '2']),
    )
    .addOption(
      new Option('--transaction-max-timeout <duration>', "the broker's transaction.max.timeout.ms, e.g. 15m or 60s")
        .argParser(durationArgument)
        .default(15 * 60 * 1000, '15m'),
    )
    .option('--wipe', "delete the data folder's topics and format it anew", false)
    .action(
      async (options: {
        dataDir: string;
        port: number;
        controllerPort?: number;
        transactionVersion?: '1' | '2';
        transactionMaxTimeout: number;
        wipe: boolean;
      }) => {
        const state = await startLocalBroker({
          dataDir: options.dataDir,
          port: options.port,
          ...(options.controllerPort === undefined ? {} : { controllerPort: options.controllerPort }),
          ...(options.transactionVersion === undefined ? {} : { transactionVersion: Number(options.transactionVersion) as 1 | 2 }),
          transactionMaxTimeoutMs: options.transactionMaxTimeout,
          wipe: options.wipe,
          log: progress,
        });
        console.log(
          `Kafka ${state.kafkaVersion} is running at ${bootstrapOf(state)} (pid ${state.pid}, transaction.version=${state.transactionVersion}, ` +
            `transaction.max.timeout.ms=${state.transactionMaxTimeoutMs} (${formatDuration(state.transactionMaxTimeoutMs)}), data ${state.dataDir})`,
        );
        console.log(`export KAFKA_BROKERS=${bootstrapOf(state)}`);
      },
    );

  kafka
    .command('stop')
    .description('stop the local broker with SIGTERM and wait until it has exited')
    .addOption(dataDirOption())
    .action(async (options: { dataDir: string }) => {
      const state = await stopLocalBroker({ dataDir: options.dataDir, log: progress });
      console.log(
        state === undefined
          ? `no local broker was running (data ${resolve(options.dataDir)})`
          : `stopped the broker at ${bootstrapOf(state)} (pid ${state.pid})`,
      );
    });

  kafka
    .command('status')
    .description(
      'say whether the local broker runs, where, and its Kafka version and transaction.version (exit code 3 when it does not run; without --data-dir, also whether a broker answers on 127.0.0.1:9092)',
    )
    .addOption(dataDirOption())
    .action(async (options: { dataDir: string }, command: Command) => {
      const status = await localBrokerStatus({ dataDir: options.dataDir });
      if (!status.running || status.state === undefined) {
        // No broker of this data folder: without --data-dir, say whether one answers on the default port anyway.
        const found = command.getOptionValueSource('dataDir') === 'default' ? await brokerOnPort(DEFAULT_PORT) : undefined;
        if (found !== undefined) {
          console.log(
            `a Kafka broker answers at 127.0.0.1:${DEFAULT_PORT} (transaction.version=${found.transactionVersion}), but not one started with data ${status.dataDir}: give its --data-dir to see more, or use it as KAFKA_BROKERS=127.0.0.1:${DEFAULT_PORT}`,
          );
          return;
        }
        throw new WeirError('NOT_RUNNING', `no local broker is running (data ${status.dataDir})`, { hint: 'start one with `weir kafka start`' });
      }
      const { state } = status;
      if (status.problem !== undefined) {
        throw new WeirError(
          'BROKER_UNREACHABLE',
          `the local broker process runs (pid ${state.pid}) but does not answer at ${bootstrapOf(state)}: ${status.problem}`,
          {
            hint: `look at ${state.dataDir}/broker.log; \`weir kafka stop\` then \`weir kafka start\` restarts it`,
            fault: 'external',
          },
        );
      }
      console.log(
        `running at ${bootstrapOf(state)} (pid ${state.pid}), Kafka ${state.kafkaVersion}, transaction.version=${status.transactionVersion}, ` +
          `transaction.max.timeout.ms=${state.transactionMaxTimeoutMs} (${formatDuration(state.transactionMaxTimeoutMs)}), data ${state.dataDir}, since ${state.startedAt}`,
      );
    });

  kafka
    .command('fetch')
    .description('only fetch Apache Kafka through Maven into its cache (CI does this before the tests)')
    .action(async () => {
      const distribution = await resolveKafkaDistribution(progress);
      console.log(`Apache Kafka ${distribution.kafkaVersion} is in Maven's cache (${distribution.classpath.split(':').length} jars)`);
    });

  return kafka;
}
