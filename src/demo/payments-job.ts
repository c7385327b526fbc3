/**
 * The showcase job: payments in, per-account balances out, exactly once. Payments are JSON
 * {seq, account, amount} on WEIR_DEMO_INPUT; for each one the job emits {seq, account, amount,
 * balance} to WEIR_DEMO_OUTPUT, keyed by account, with the balance kept in keyed state.
 */
import { defineJob } from '../api/define-job.ts';
import { kafkaSink } from '../connectors/kafka/kafka-sink.ts';
import { kafkaDeserializers, kafkaSource } from '../connectors/kafka/kafka-source.ts';
import { valueState } from '../state/state-descriptors.ts';
import type { ValueState } from '../state/state-types.ts';

export interface Payment {
  seq: number;
  account: string;
  amount: number;
}

export interface BalanceUpdate extends Payment {
  balance: number;
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
    env
      .fromSource(
        kafkaSource<Payment>({
          topics: [process.env.WEIR_DEMO_INPUT as string],
          groupId: process.env.WEIR_DEMO_GROUP,
          deserializer: kafkaDeserializers.json,
        }),
        {
          uid: 'payments',
          name: 'payments',
        },
      )
      .keyBy((payment) => payment.account)
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
  },
});
