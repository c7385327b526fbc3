/**
 * The side-by-side benchmark's job on Weir (bench/compare.ts): read (Kafka, read_committed), parse
 * (JSON), keyBy, running count per key (value state), write (Kafka, exactly-once). The same job as
 * the Flink and Kafka Streams peers in bench/peers/. From the environment: BC_INPUT, BC_OUTPUT,
 * KAFKA_BROKERS, BC_BOUNDED (1: stop at the input's end, for profiling); parallelism, checkpoint interval and storage come from `weir run` options.
 */
import { defineJob } from '../../src/api/define-job.ts';
import { kafkaDeserializers } from '../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSink } from '../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../src/connectors/kafka/kafka-source.ts';
import { valueState } from '../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../src/core/state/state-types.ts';

/** An input record. */
interface In {
  seq: number;
  key: string;
  ts: number;
}

/** An output record: the input's fields and the key's running count. */
interface Out extends In {
  count: number;
}

export default defineJob({
  name: 'bench-compare',
  build(env) {
    let count: ValueState<number>;
    env
      .fromSource(
        kafkaSource<In>({ topics: [process.env.BC_INPUT as string], bounded: process.env.BC_BOUNDED === '1', deserializer: kafkaDeserializers.json }),
        { uid: 'input' },
      )
      .keyBy((record) => record.key)
      .process<Out>(
        {
          open(context) {
            count = context.getState(valueState<number>('count'));
          },
          processElement(record, _context, out) {
            const next = (count.value() ?? 0) + 1;
            count.update(next);
            out.collect({ seq: record.seq, key: record.key, ts: record.ts, count: next });
          },
        },
        { uid: 'count' },
      )
      .sinkTo(
        kafkaSink<Out>({
          topic: process.env.BC_OUTPUT as string,
          serializer: (record) => ({ key: record.key, value: JSON.stringify(record) }),
          deliveryGuarantee: 'exactly-once',
        }),
        { uid: 'output' },
      );
  },
});
