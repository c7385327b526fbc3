/**
 * The showcase job: payments in, exactly once, two results out.
 *
 * - Balances: for each payment, {seq, account, amount, ts, balance} to WEIR_DEMO_OUTPUT, keyed by
 *   account, the balance kept in keyed state.
 * - Per-account totals per minute of event time: {account, minute, total, payments} to
 *   WEIR_DEMO_TOTALS, from tumbling one-minute event-time windows. Payments carry their event time
 *   `ts` and arrive up to a few seconds out of order; the watermark allows 5 s.
 *
 * Payments are JSON {seq, account, amount, ts} on WEIR_DEMO_INPUT.
 */
import { defineJob } from '../api/define-job.ts';
import { TumblingEventTimeWindows } from '../api/windowing/tumbling-windows.ts';
import { kafkaDeserializers } from '../connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../connectors/kafka/kafka-source.ts';
import { WatermarkStrategy } from '../core/event-time/watermark-strategy.ts';
import type { Collector } from '../core/functions/process-functions.ts';
import { valueState } from '../core/state/state-descriptors.ts';
import type { ValueState } from '../core/state/state-types.ts';

export interface Payment {
  seq: number;
  account: string;
  amount: number;
  /** Event time, in milliseconds. */
  ts: number;
}

export interface BalanceUpdate extends Payment {
  balance: number;
}

export interface MinuteTotal {
  account: string;
  /** The window's start: event time in milliseconds, a whole minute. */
  minute: number;
  total: number;
  payments: number;
}

interface Accumulator {
  total: number;
  payments: number;
}

export default defineJob({
  name: 'payments',
  config: {
    parallelism: 2,
    workers: 2,
    checkpointing: { interval: '200ms', storage: process.env.WEIR_DEMO_CHECKPOINTS ?? '.weir/demo/checkpoints' },
    restartStrategy: { type: 'fixed-delay', attempts: 5, delay: '500ms' },
  },
  build(env) {
    let balance: ValueState<number>;
    const byAccount = env
      .fromSource(
        kafkaSource<Payment>({
          topics: [process.env.WEIR_DEMO_INPUT as string],
          groupId: process.env.WEIR_DEMO_GROUP,
          deserializer: kafkaDeserializers.json,
        }),
        {
          uid: 'payments',
          name: 'payments',
          watermarkStrategy: WatermarkStrategy.forBoundedOutOfOrderness<Payment>('5s').withTimestampAssigner((payment) => payment.ts),
        },
      )
      .keyBy((payment) => payment.account);

    byAccount
      .process<BalanceUpdate>(
        {
          open(context) {
            balance = context.getState(valueState<number>('balance'));
          },
          processElement(payment, _context, out) {
            const next = (balance.value() ?? 0) + payment.amount;
            balance.update(next);
            out.collect({ ...payment, balance: next });
          },
        },
        { uid: 'balances', name: 'balances' },
      )
      .sinkTo(
        kafkaSink<BalanceUpdate>({
          topic: process.env.WEIR_DEMO_OUTPUT as string,
          serializer: (update) => ({ key: update.account, value: JSON.stringify(update) }),
          deliveryGuarantee: 'exactly-once',
          // One prefix per demo run (its output topic is new each run): two jobs running at once
          // must never share transactional ids, or they fence each other.
          transactionalIdPrefix: `weir-${process.env.WEIR_DEMO_OUTPUT}`,
        }),
        { uid: 'balance-updates', name: 'balance updates' },
      );

    byAccount
      .window(TumblingEventTimeWindows.of('1m'))
      .aggregate<Accumulator, Accumulator, MinuteTotal>(
        {
          createAccumulator: () => ({ total: 0, payments: 0 }),
          add: (payment, accumulator) => ({ total: accumulator.total + payment.amount, payments: accumulator.payments + 1 }),
          getResult: (accumulator) => accumulator,
          merge: (a, b) => ({ total: a.total + b.total, payments: a.payments + b.payments }),
        },
        {
          process(account, context, results, out: Collector<MinuteTotal>) {
            const result = results[0] as Accumulator;
            out.collect({ account, minute: context.window.start, total: result.total, payments: result.payments });
          },
        },
        { uid: 'minute-totals', name: 'totals per minute' },
      )
      .sinkTo(
        kafkaSink<MinuteTotal>({
          topic: process.env.WEIR_DEMO_TOTALS as string,
          serializer: (total) => ({ key: total.account, value: JSON.stringify(total) }),
          deliveryGuarantee: 'exactly-once',
          transactionalIdPrefix: `weir-${process.env.WEIR_DEMO_TOTALS}`,
        }),
        { uid: 'minute-totals-out', name: 'minute totals' },
      );
  },
});
