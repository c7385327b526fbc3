import { Admin, Producer, stringSerializers } from '@platformatic/kafka';
import { Command, Option } from 'commander';
import { formatBootstrap } from '../../connectors/kafka/bootstrap.ts';
import { readTopic } from '../../connectors/kafka/topic-reader.ts';
import { WeirError } from '../../errors.ts';
import { ensureBroker } from '../../local-kafka/ensure-broker.ts';
import { positiveIntegerArgument } from '../arguments.ts';

interface Payment {
  seq: number;
  account: string;
  amount: number;
}

/**
 * The starter pipeline that `npm start` runs until the engine's showcase job replaces it: payments
 * written in Kafka transactions (some aborted), read back read_committed, turned into per-account
 * balance updates written in transactions, and audited read_committed.
 */
export function demoCommand(): Command {
  return new Command('demo')
    .description('run a small transactional pipeline on KAFKA_BROKERS, or on a local broker started for the run, and audit its output')
    .addOption(new Option('--records <n>', 'payments to write').argParser(positiveIntegerArgument).default(1000))
    .addOption(new Option('--accounts <n>', 'distinct accounts').argParser(positiveIntegerArgument).default(10))
    .option('--keep-broker', 'leave a local broker started for the run running afterwards', false)
    .action(async (options: { records: number; accounts: number; keepBroker: boolean }) => {
      const log = (line: string) => process.stdout.write(`${line}\n`);
      const started = Date.now();
      const broker = await ensureBroker({ log: (line) => process.stderr.write(`${line}\n`) });
      log(`Kafka: ${broker.source}`);
      const bootstrapBrokers = [formatBootstrap(broker.brokers)];
      const run = Date.now().toString(36);
      const input = `weir-demo-payments-${run}`;
      const output = `weir-demo-balances-${run}`;
      const admin = new Admin({ clientId: 'weir-demo', bootstrapBrokers });
      const producer = new Producer({
        clientId: 'weir-demo',
        bootstrapBrokers,
        serializers: stringSerializers,
        idempotent: true,
        transactionalId: `weir-demo-${run}`,
      });
      try {
        await admin.createTopics({ topics: [input, output], partitions: 2, replicas: 1 });

        // 1. Payments, 100 per transaction; every fifth transaction is aborted and must never count.
        let committedPayments = 0;
        let abortedPayments = 0;
        for (let first = 0; first < options.records; first += 100) {
          const payments: Payment[] = [];
          for (let seq = first; seq < Math.min(first + 100, options.records); seq++) {
            payments.push({ seq, account: `acct-${seq % options.accounts}`, amount: (seq % 7) + 1 });
          }
          const abort = (first / 100) % 5 === 4;
          const transaction = await producer.beginTransaction();
          await transaction.send({ messages: payments.map((payment) => ({ topic: input, key: payment.account, value: JSON.stringify(payment) })) });
          if (abort) {
            await transaction.abort();
            abortedPayments += payments.length;
          } else {
            await transaction.commit();
            committedPayments += payments.length;
          }
        }
        log(`wrote ${committedPayments} payments in committed transactions and ${abortedPayments} in aborted ones to ${input}`);

        // 2. Read them read_committed, keep per-account balances, write one update per payment in one transaction.
        const payments = (await readTopic({ bootstrap: broker.brokers, topic: input })).map((record) => JSON.parse(String(record.value)) as Payment);
        const balances = new Map<string, number>();
        const updates = payments.map((payment) => {
          const balance = (balances.get(payment.account) ?? 0) + payment.amount;
          balances.set(payment.account, balance);
          return { topic: output, key: payment.account, value: JSON.stringify({ seq: payment.seq, account: payment.account, balance }) };
        });
        const transaction = await producer.beginTransaction();
        await transaction.send({ messages: updates });
        await transaction.commit();
        log(`read ${payments.length} payments read_committed and wrote ${updates.length} balance updates to ${output} in one transaction`);

        // 3. Audit the output read_committed.
        const seen = new Map<number, number>();
        for (const record of await readTopic({ bootstrap: broker.brokers, topic: output })) {
          const { seq } = JSON.parse(String(record.value)) as { seq: number };
          seen.set(seq, (seen.get(seq) ?? 0) + 1);
        }
        const duplicates = [...seen.values()].filter((count) => count > 1).length;
        const expected = new Set(payments.map((payment) => payment.seq));
        const missing = [...expected].filter((seq) => !seen.has(seq)).length;
        const fromAborted = [...seen.keys()].filter((seq) => !expected.has(seq)).length;
        log(
          `audit: ${seen.size} distinct outputs for ${committedPayments} committed inputs; ${duplicates} duplicates, ${missing} missing, ${fromAborted} from aborted input; ${((Date.now() - started) / 1000).toFixed(1)}s`,
        );
        if (duplicates + missing + fromAborted > 0 || payments.length !== committedPayments) {
          throw new WeirError('AUDIT_FAILED', 'the output is not exactly the committed input', { fault: 'internal' });
        }
        await admin.deleteTopics({ topics: [input, output] });
      } finally {
        await producer.close();
        await admin.close();
        if (!options.keepBroker) await broker.release();
      }
    });
}
