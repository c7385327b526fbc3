/**
 * The Kafka benchmark's job: Kafka -> map -> Kafka. From the environment: BK_INPUT, BK_OUTPUT,
 * BK_GUARANTEE (exactly-once | at-least-once), BK_BOUNDED (1: stop at the input's end), KAFKA_BROKERS.
 * Records are JSON {seq, key, ts}; the map adds a field and keeps ts (the produce time of the input).
 */
import { defineJob } from '../../src/api/define-job.ts';
import { kafkaDeserializers } from '../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../src/connectors/kafka/kafka-source.ts';
import type { DeliveryGuarantee } from '../../src/core/connector/sink.ts';

interface BenchRecord {
  seq: number;
  key: string;
  ts: number;
  mapped?: boolean;
}

export default defineJob({
  name: 'bench-kafka-map',
  build(env) {
    env
      .fromSource(
        kafkaSource<BenchRecord>({ topics: [process.env.BK_INPUT as string], bounded: process.env.BK_BOUNDED === '1', deserializer: kafkaDeserializers.json }),
        {
          uid: 'input',
        },
      )
      .map((record) => ({ ...record, mapped: true }), { uid: 'map' })
      .sinkTo(
        kafkaSink<BenchRecord>({
          topic: process.env.BK_OUTPUT as string,
          serializer: (record) => ({ key: record.key, value: JSON.stringify(record) }),
          deliveryGuarantee: (process.env.BK_GUARANTEE ?? 'exactly-once') as DeliveryGuarantee,
        }),
        { uid: 'output' },
      );
  },
});
