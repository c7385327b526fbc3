/**
 * The format benchmark's job (bench/kafka-formats.ts): Kafka -> map -> Kafka, exactly-once, the
 * records in JSON or in Avro through the Schema Registry. From the environment: BF_INPUT, BF_OUTPUT,
 * BF_FORMAT (json | avro), KAFKA_BROKERS, WEIR_SCHEMA_REGISTRY_URL.
 */
import { defineJob } from '../../src/api/define-job.ts';
import { kafkaDeserializers } from '../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../src/connectors/kafka/kafka-source.ts';
import { avroDeserializer } from '../../src/connectors/schema-registry/avro-deserializer.ts';
import { avroSerializer } from '../../src/connectors/schema-registry/avro-serializer.ts';
import { schemaRegistry } from '../../src/connectors/schema-registry/schema-registry-client.ts';
import { withSchemaRegistry } from '../../src/connectors/schema-registry/with-schema-registry.ts';

export interface Order {
  id: number;
  amount: number;
  currency: string;
  note: string;
}

export const ORDER_SCHEMA = {
  type: 'record',
  name: 'Order',
  namespace: 'dev.weir.bench',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'amount', type: 'double' },
    { name: 'currency', type: 'string' },
    { name: 'note', type: 'string' },
  ],
};

export default defineJob({
  name: 'bench-kafka-formats',
  build(env) {
    const input = process.env.BF_INPUT as string;
    const output = process.env.BF_OUTPUT as string;
    const avro = process.env.BF_FORMAT === 'avro';
    const registry = avro ? schemaRegistry() : undefined;
    const decoder = registry === undefined ? kafkaDeserializers.json : avroDeserializer<Order>({ registry });
    const encoder =
      registry === undefined
        ? (order: Order) => JSON.stringify(order)
        : avroSerializer<Order>({ registry, schema: ORDER_SCHEMA, topic: output, autoRegister: true });
    const source = kafkaSource<Order>({ topics: [input], bounded: true, deserializer: decoder, partitionDiscoveryInterval: 0 });
    const sink = kafkaSink<Order>({
      topic: output,
      serializer: (order) => ({ key: String(order.id % 1000), value: encoder(order) }),
      deliveryGuarantee: 'exactly-once',
    });
    env
      .fromSource(registry === undefined ? source : withSchemaRegistry(source, decoder as ReturnType<typeof avroDeserializer<Order>>), { uid: 'input' })
      .map((order) => ({ ...order, amount: order.amount * 2 }), { uid: 'map' })
      .sinkTo(registry === undefined ? sink : withSchemaRegistry(sink, encoder as ReturnType<typeof avroSerializer<Order>>), { uid: 'output' });
  },
});
