/**
 * Avro in, Avro out, through a real Schema Registry: the job of avro-registry-job.test.ts.
 * registry-job-pipeline.ts with avroDeserializer for the Orders and avroSerializer for the Totals
 * (the schema registered beforehand: autoRegister off). From the environment:
 *   AV_REGISTRY          the registry's url; AV_INPUT, AV_OUTPUT, AV_DLQ topics; KAFKA_BROKERS
 *   AV_POLICY            the source's onDeserializationError: fail (default), skip or dlq
 *   AV_WORK_US           busy work per record in microseconds (a run long enough to kill)
 */
import { defineJob } from '../../../src/api/define-job.ts';
import { avroDeserializer } from '../../../src/connectors/schema-registry/avro-deserializer.ts';
import { avroSerializer } from '../../../src/connectors/schema-registry/avro-serializer.ts';
import { schemaRegistry } from '../../../src/connectors/schema-registry/schema-registry-client.ts';
import { registryPipeline, type Total } from './registry-job-pipeline.ts';

export type { Total };

export interface Order {
  id: number;
  amount: number;
  currency: string;
}
export const orderSchema = {
  type: 'record',
  name: 'Order',
  namespace: 'dev.weir.test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'amount', type: 'double' },
    { name: 'currency', type: 'string' },
  ],
};
export const totalSchema = {
  type: 'record',
  name: 'Total',
  namespace: 'dev.weir.test',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'cents', type: 'long' },
    { name: 'label', type: 'string' },
  ],
};

const workMicros = Number(process.env.AV_WORK_US ?? 0);

export default defineJob({
  name: 'avro-registry',
  build(env) {
    const registry = schemaRegistry({ url: process.env.AV_REGISTRY as string, retryTimeout: 1000 });
    const output = process.env.AV_OUTPUT as string;
    registryPipeline(env, {
      input: process.env.AV_INPUT as string,
      output,
      dlq: process.env.AV_DLQ,
      policy: process.env.AV_POLICY,
      orders: avroDeserializer<Order>({ registry }),
      totals: avroSerializer<Total>({ registry, schema: totalSchema, topic: output }),
      total(order: Order): Total {
        if (workMicros > 0) {
          const until = performance.now() + workMicros / 1000;
          while (performance.now() < until);
        }
        return { id: order.id, cents: Math.round(order.amount * 100), label: `${order.currency}-${order.id}` };
      },
    });
  },
});
