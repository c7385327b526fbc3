// The example of docs/writing-a-job.md, kept here so the typecheck proves it compiles.
// In your own project the import is from 'weir-streams'.
// balances.ts
import { defineJob, kafkaDeserializers, kafkaSink, kafkaSource, type ValueState, valueState } from '../src/index.ts';

interface Payment {
  seq: number;
  account: string;
  amount: number;
}

export default defineJob({
  name: 'balances',
  config: {
    parallelism: 2,
    checkpointing: { interval: '1s', storage: '.weir/balances/checkpoints' },
  },
  build(env) {
    let balance: ValueState<number>;
    env
      .fromSource(kafkaSource<Payment>({ topics: ['payments'], deserializer: kafkaDeserializers.json }), { uid: 'payments' })
      .keyBy((payment) => payment.account)
      .process<Payment & { balance: number }>(
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
        { uid: 'balances' },
      )
      .sinkTo(
        kafkaSink({ topic: 'balances', serializer: (update) => ({ key: update.account, value: JSON.stringify(update) }), deliveryGuarantee: 'exactly-once' }),
        { uid: 'balances-out' },
      );
  },
});
