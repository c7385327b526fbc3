/**
 * The scaling benchmark's job, shaped by the environment (every worker thread sees the same):
 * a source (SC_SOURCE=datagen: SC_RECORDS records over SC_KEYS keys; SC_SOURCE=kafka: the bounded
 * topic SC_INPUT) -> SC_CHAIN chained maps -> keyBy -> keyed running sum -> discarding sink.
 */

import type { DataStream } from '../../src/api/data-stream.ts';
import { defineJob } from '../../src/api/define-job.ts';
import { dataGenSource } from '../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../src/connectors/discarding-sink.ts';
import { kafkaDeserializers } from '../../src/connectors/kafka/kafka-deserializers.ts';
import { kafkaSource } from '../../src/connectors/kafka/kafka-source.ts';
import { valueState } from '../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../src/core/state/state-types.ts';

interface Entry {
  key: string;
  amount: number;
}

export default defineJob({
  name: 'bench-scaling',
  build(env) {
    let stream: DataStream<Entry> =
      process.env.SC_SOURCE === 'kafka'
        ? env.fromSource(
            kafkaSource<Entry>({
              topics: [process.env.SC_INPUT as string],
              bounded: true,
              deserializer: kafkaDeserializers.json,
              partitionDiscoveryInterval: 0,
            }),
            { uid: 'input' },
          )
        : env.fromSource(dataGenSource({ count: Number(process.env.SC_RECORDS ?? 1_000_000), keys: Number(process.env.SC_KEYS ?? 1000) }), {
            uid: 'generator',
          });
    for (let i = 0; i < Number(process.env.SC_CHAIN ?? 1); i++)
      stream = stream.map((entry) => ({ key: entry.key, amount: entry.amount + 1 }), { uid: `map-${i}` });
    let sum: ValueState<number>;
    stream
      .keyBy((entry) => entry.key)
      .process<number>(
        {
          open(context) {
            sum = context.getState(valueState<number>('sum'));
          },
          processElement(entry, _context, out) {
            const next = (sum.value() ?? 0) + entry.amount;
            sum.update(next);
            out.collect(next);
          },
        },
        { uid: 'sum' },
      )
      .sinkTo(discardingSink<number>(), { uid: 'discard' });
  },
});
