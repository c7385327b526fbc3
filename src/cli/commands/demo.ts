import { Command, Option } from 'commander';
import { describeCluster } from '../../connectors/kafka/cluster-info.ts';
import { describeKafkaSettings } from '../../connectors/kafka/kafka-default-connection.ts';
import type { KafkaSettingsOptions } from '../../connectors/kafka/kafka-settings.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { ensureBroker } from '../../local-kafka/ensure-broker.ts';
import { positiveIntegerArgument } from '../arguments.ts';
import { addKafkaOptions, kafkaSettingsEnv, useKafkaSettings } from '../kafka-options.ts';

const wholeNumber = (value: string) => {
  const number = Number(value);
  if (!/^\d+$/.test(value)) throw new Error('give a whole number');
  return number;
};

/**
 * The main job, `npm start`: payments with per-account balances, exactly once, through crashes.
 * Uses the Kafka settings (--brokers, KAFKA_BROKERS, --kafka-config, ...), or without brokers a
 * local broker it starts (and stops again unless --keep-broker).
 */
export function demoCommand(): Command {
  return addKafkaOptions(new Command('demo'))
    .description(
      'the showcase: payments streamed into Kafka (some in aborted transactions) -> per-account balances and per-minute event-time totals, exactly once, with SIGKILLs mid-stream, a stop with savepoint, then a read_committed audit',
    )
    .addOption(new Option('--records <n>', 'payments to write').argParser(positiveIntegerArgument).default(100_000))
    .addOption(new Option('--accounts <n>', 'distinct accounts').argParser(positiveIntegerArgument).default(100))
    .addOption(
      new Option('--rate <n>', 'payments per second streamed into the input while the job runs; 0: as fast as possible').argParser(wholeNumber).default(10_000),
    )
    .addOption(new Option('--crashes <n>', 'how many times the job is killed with SIGKILL and resumed').argParser(wholeNumber).default(2))
    .option('--data-dir <folder>', 'where the demo keeps its checkpoints', '.weir/demo')
    .addOption(
      new Option('--ui-port <port>', "the job's dashboard on 127.0.0.1 (a free port when this one is taken; 0 picks one)").argParser(wholeNumber).default(8081),
    )
    .option('--keep-broker', 'leave a local broker started for the run running afterwards', false)
    .action(
      async (
        options: KafkaSettingsOptions & {
          records: number;
          accounts: number;
          rate: number;
          crashes: number;
          dataDir: string;
          uiPort: number;
          keepBroker: boolean;
        },
      ) => {
        const log = (line: string) => process.stdout.write(`${line}\n`);
        const settings = useKafkaSettings(options, (line) => process.stderr.write(`${line}\n`));
        if (settings.bootstrap === undefined && settings.securityProtocol !== 'PLAINTEXT') {
          throw new WeirError('NO_BOOTSTRAP', `the Kafka settings ask for ${settings.securityProtocol} but name no brokers`, {
            hint: 'give --brokers (or bootstrap.servers in the --kafka-config file); without brokers the demo starts a local PLAINTEXT broker',
          });
        }
        const broker =
          settings.bootstrap === undefined
            ? await ensureBroker({ log: (line) => process.stderr.write(`${line}\n`) })
            : await describeCluster(settings.bootstrap, undefined, settings.connection).then(() => ({
                brokers: settings.bootstrap as NonNullable<typeof settings.bootstrap>,
                source: `${describeKafkaSettings(settings)} (brokers from ${settings.sources['bootstrap.servers']})`,
                release: async () => {},
              }));
        log(`Kafka: ${broker.source}`);
        try {
          // Loaded here: the demo's writer and lag reader (the client's Admin) are no cost to other commands.
          const { runPaymentsDemo } = await import('../../demo/payments-demo.ts');
          const audit = await runPaymentsDemo({
            brokers: broker.brokers,
            connection: settings.connection,
            env: kafkaSettingsEnv(options),
            records: options.records,
            accounts: options.accounts,
            rate: options.rate === 0 ? undefined : options.rate,
            crashes: options.crashes,
            folder: options.dataDir,
            uiPort: options.uiPort,
            log,
          });
          log('');
          log(`audit of ${audit.output} (read_committed):`);
          log(`  inputs:        ${audit.committedInputs} committed payments, ${audit.abortedInputs} in aborted transactions`);
          log(`  outputs:       ${audit.outputs} balance updates for ${audit.accounts} accounts`);
          log(`  duplicates:    ${audit.duplicates}`);
          log(`  missing:       ${audit.missing}`);
          if (audit.unexpected > 0) log(`  unexpected:    ${audit.unexpected} (neither a committed nor an aborted payment)`);
          log(`  from aborted:  ${audit.fromAborted}`);
          log(
            `  balances:      ${audit.wrongBalances === 0 ? 'every balance equals the sum of its committed payments' : `${audit.wrongBalances} accounts wrong`}`,
          );
          log(
            `  minute totals: ${audit.windows} windows (account x minute of event time): ${audit.windowsMissing} missing, ${audit.windowsDuplicated} duplicated, ${audit.windowsWrong} wrong`,
          );
          log(`  job kills:     ${audit.kills} (SIGKILL, resumed each time from the latest checkpoint)`);
          log(`  time:          ${audit.seconds.toFixed(1)} s`);
          const windowErrors = audit.windowsMissing + audit.windowsDuplicated + audit.windowsWrong;
          if (
            audit.duplicates + audit.missing + audit.unexpected + audit.fromAborted + audit.wrongBalances + windowErrors > 0 ||
            audit.outputs !== audit.committedInputs
          ) {
            throw new WeirError('AUDIT_FAILED', 'the output is not exactly the committed input', { fault: 'internal' });
          }
          log('exactly once: OK');
        } finally {
          if (!options.keepBroker) await broker.release();
        }
      },
    );
}
