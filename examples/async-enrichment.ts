// examples/async-enrichment.ts: the async I/O example of docs/writing-a-job.md (the typecheck
// compiles it; a unit test keeps the docs' copy equal). In a project the import is 'weir-streams'.
import { AsyncDataStream, defineJob, kafkaDeserializers, kafkaSink, kafkaSource, type RichAsyncFunction } from '../src/index.ts';

interface Order {
  id: string;
  customer: string;
  amount: number;
}
interface EnrichedOrder extends Order {
  tier: string;
}

const customers: RichAsyncFunction<Order, EnrichedOrder> = {
  async asyncInvoke(order, { signal }) {
    const response = await fetch(`http://customers.internal/v1/customers/${order.customer}`, { signal });
    if (response.status === 404) return []; // no such customer: the order is dropped
    if (!response.ok) throw new Error(`customers answered ${response.status}`);
    const { tier } = (await response.json()) as { tier: string };
    return [{ ...order, tier }];
  },
  // The 2 s passed (retries included): keep the order, marked.
  timeout: (order) => [{ ...order, tier: 'unknown' }],
};

export default defineJob({
  name: 'enrich-orders',
  config: { parallelism: 2, checkpointing: { interval: '1s', storage: '.weir/enrich-orders/checkpoints' } },
  build(env) {
    const orders = env.fromSource(kafkaSource<Order>({ topics: ['orders'], deserializer: kafkaDeserializers.json }), { uid: 'orders' });
    AsyncDataStream.orderedWait(orders, customers, {
      uid: 'customers',
      timeout: '2s',
      capacity: 200,
      retry: { maxAttempts: 4, delay: { initial: '50ms', max: '1s' }, ifError: (error) => String(error).includes('answered 5') },
    }).sinkTo(
      kafkaSink({ topic: 'orders-enriched', serializer: (order) => ({ key: order.id, value: JSON.stringify(order) }), deliveryGuarantee: 'exactly-once' }),
      { uid: 'enriched' },
    );
  },
});
