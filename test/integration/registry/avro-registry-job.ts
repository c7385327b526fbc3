/**
 * Avro in, Avro out, through a real Schema Registry: the job of avro-registry-job.test.ts.
 * A bounded Kafka source reads Orders in the registry wire format (avroDeserializer), a map turns
 * each into a Total, an exactly-once Kafka sink writes Totals in the wire format (avroSerializer,
 * the schema registered beforehand: autoRegister off). Both are wrapped in withSchemaRegistry, so
 * the preflight checks the registry and the output subject. From the environment:
 *   AV_REGISTRY          the registry's url; AV_INPUT, AV_OUTPUT, AV_DLQ topics; KAFKA_BROKERS
 *   AV_POLICY            the source's onDeserializationError: fail (default), skip or dlq
 *   AV_WORK_US           busy work per record in microseconds (a run long enough to kill)
 */
import { defineJob } from '../../../src/api/define-job.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import { avroDeserializer } from '../../../src/connectors/schema-registry/avro-deserializer.ts';
import { avroSerializer } from '../../../src/connectors/schema-registry/avro-serializer.ts';
import { schemaRegistry } from '../../../src/connectors/schema-registry/schema-registry-client.ts';
import { withSchemaRegistry } from '../../../src/connectors/schema-registry/with-schema-registry.ts';

export interface Order {
  id: number;
  amount: number;
  currency: string;
}
export interface Total {
  id: number;
  cents: number;
  label: string;
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
    const orders = avroDeserializer<Order>({ registry });
    const totals = avroSerializer<Total>({ registry, schema: totalSchema, topic: process.env.AV_OUTPUT as string });
    const policy = process.env.AV_POLICY;
    env
      .fromSource(
        withSchemaRegistry(
          kafkaSource<Order>({
            topics: [process.env.AV_INPUT as string],
            bounded: true,
            deserializer: orders,
            onDeserializationError: policy === 'dlq' ? { deadLetter: { topic: process.env.AV_DLQ as string } } : policy === 'skip' ? 'skip' : 'fail',
            partitionDiscoveryInterval: 0,
          }),
          orders,
        ),
        { uid: 'input' },
      )
      .map(
        (order: Order): Total => {
          if (workMicros > 0) {
            const until = performance.now() + workMicros / 1000;
            while (performance.now() < until);
          }
          return { id: order.id, cents: Math.round(order.amount * 100), label: `${order.currency}-${order.id}` };
        },
        { name: 'total', uid: 'total' },
      )
      .sinkTo(
        withSchemaRegistry(
          kafkaSink<Total>({
            topic: process.env.AV_OUTPUT as string,
            serializer: (total) => ({ key: String(total.id), value: totals(total) }),
            deliveryGuarantee: 'exactly-once',
            transactionalIdPrefix: `weir-${process.env.AV_OUTPUT}`,
          }),
          totals,
        ),
        { uid: 'output' },
      );
  },
});
