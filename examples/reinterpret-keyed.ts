// examples/reinterpret-keyed.ts: the reinterpretAsKeyedStream example of docs/writing-a-job.md (the
// typecheck compiles it; a unit test keeps the docs' copy equal). In a project the import is 'weir-streams'.
import { DataStreamUtils, defineJob, kafkaDeserializers, kafkaSink, kafkaSource, keyGroupPartitioner, type ValueState, valueState } from '../src/index.ts';

interface Payment {
  account: string;
  amount: number;
}

// The upstream job writes `payments-by-account` (12 partitions) with partitioner: keyGroupPartitioner,
// so partition p holds key group p of the account keys:
export const paymentsByAccount = kafkaSink<Payment>({
  topic: 'payments-by-account',
  serializer: (payment) => ({ key: payment.account, value: JSON.stringify(payment) }),
  partitioner: keyGroupPartitioner,
  deliveryGuarantee: 'exactly-once',
});

// This job reads it with as many key groups as partitions, keyed where the records already are.
export default defineJob({
  name: 'balances-without-an-exchange',
  config: { parallelism: 3, maxParallelism: 12, checkpointing: { interval: '1s', storage: '.weir/balances-nx/checkpoints' } },
  build(env) {
    let balance: ValueState<number>;
    const payments = env.fromSource(kafkaSource<Payment>({ topics: ['payments-by-account'], deserializer: kafkaDeserializers.json }), { uid: 'payments' });
    DataStreamUtils.reinterpretAsKeyedStream(payments, (payment) => payment.account)
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
