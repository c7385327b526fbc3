// examples/windowed-totals-postgres.ts: Kafka -> keyBy(account) -> tumbling one-minute event-time
// windows -> each account's total per window, upserted into PostgreSQL by (account, window_start),
// exactly-once: each checkpoint's rows in one prepared transaction per subtask, committed when the
// checkpoint completes (docs/connectors.md, "PostgreSQL sink"). In a project the import is
// 'weir-streams'. test/integration/postgres/windowed-totals-example.test.ts runs it, with a SIGKILL.
//
// Run it against a local broker and a PostgreSQL that allows prepared transactions
// (max_prepared_transactions = 10 in postgresql.conf, then restart PostgreSQL; its default 0 is
// refused by the job's preflight, naming the setting):
//
//   npx weir kafka start && npx weir topic create payments --partitions 2
//   export PGHOST=127.0.0.1 PGPORT=5432 PGUSER=weir PGDATABASE=app   # libpq's variables, as psql reads them
//   psql -c 'CREATE TABLE account_totals (account text, window_start timestamptz, window_end timestamptz,
//            total bigint NOT NULL, payments int NOT NULL, PRIMARY KEY (account, window_start))'
//   npx weir run examples/windowed-totals-postgres.ts
//   echo "{\"account\":\"alice\",\"amount\":1250,\"ts\":$(date +%s%3N)}" | npx weir produce payments
//   psql -c 'SELECT * FROM account_totals ORDER BY window_start, account'
//
// A window's row appears once the watermark (the smallest event time read from any partition, less
// 5 s) passes its end, and the checkpoint after that completes; a partition without payments for
// 30 s stops holding the watermark back. PAYMENTS_TOPIC names another topic than `payments`.
import { defineJob, kafkaDeserializers, kafkaSource, postgresSink, TumblingEventTimeWindows, WatermarkStrategy } from '../src/index.ts';

export interface Payment {
  account: string;
  /** In cents. */
  amount: number;
  /** Event time: when the payment was made, in ms since the epoch. */
  ts: number;
}

export interface AccountWindowTotal {
  account: string;
  windowStart: number;
  windowEnd: number;
  total: number;
  payments: number;
}

export default defineJob({
  name: 'account-totals',
  config: {
    parallelism: 2,
    checkpointing: { interval: '1s', storage: '.weir/account-totals/checkpoints' },
  },
  build(env) {
    env
      .fromSource(kafkaSource<Payment>({ topics: [process.env.PAYMENTS_TOPIC ?? 'payments'], deserializer: kafkaDeserializers.json }), {
        uid: 'payments',
        watermarkStrategy: WatermarkStrategy.forBoundedOutOfOrderness<Payment>('5s')
          .withTimestampAssigner((payment) => payment.ts)
          .withIdleness('30s'),
      })
      .keyBy((payment) => payment.account)
      .window(TumblingEventTimeWindows.of('1m'))
      .aggregate(
        {
          createAccumulator: () => ({ total: 0, payments: 0 }),
          add: (payment: Payment, sum: { total: number; payments: number }) => ({ total: sum.total + payment.amount, payments: sum.payments + 1 }),
          getResult: (sum) => sum,
        },
        {
          process(account, context, [sum], out) {
            out.collect({ account, windowStart: context.window.start, windowEnd: context.window.end, total: sum?.total ?? 0, payments: sum?.payments ?? 0 });
          },
        },
        { uid: 'window-totals' },
      )
      // Keyed by account upstream: each (account, window) row is written by one subtask.
      .sinkTo(
        postgresSink<AccountWindowTotal>({
          table: 'account_totals',
          columns: ['account', 'window_start', 'window_end', 'total', 'payments'],
          mode: 'upsert',
          key: ['account', 'window_start'],
          toRow: (total) => ({
            account: total.account,
            window_start: new Date(total.windowStart),
            window_end: new Date(total.windowEnd),
            total: total.total,
            payments: total.payments,
          }),
        }),
        { uid: 'totals-db' },
      );
  },
});
