/**
 * The back pressure benchmark's job, shaped by the environment (every worker thread sees the same):
 * an unbounded datagen source -> unorderedWait whose lookup waits BP_LATENCY_MS with BP_CAPACITY in
 * flight (slower than the source) -> keyBy -> keyed running sum -> discarding sink. BP_TOPOLOGY
 * `network`: the lookup runs in its own task behind a channel (rebalance); `chained`: it is chained
 * to the source, so the source's batch is what a barrier waits behind.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AsyncDataStream } from '../../src/api/async-data-stream.ts';
import { defineJob } from '../../src/api/define-job.ts';
import { type DataGenRecord, dataGenSource } from '../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../src/connectors/discarding-sink.ts';
import type { AsyncInvoke } from '../../src/core/functions/async-function.ts';
import { valueState } from '../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../src/core/state/state-types.ts';

const latency = Number(process.env.BP_LATENCY_MS ?? 20);
const lookup: AsyncInvoke<DataGenRecord, DataGenRecord> = async (record) => {
  await sleep(latency);
  return [record];
};

export default defineJob({
  name: 'bench-backpressure',
  build(env) {
    const generated = env.fromSource(dataGenSource({ keys: 1000 }), { uid: 'generator' });
    const input = process.env.BP_TOPOLOGY === 'chained' ? generated : generated.rebalance();
    let sum: ValueState<number>;
    AsyncDataStream.unorderedWait(input, lookup, { timeout: '60s', capacity: Number(process.env.BP_CAPACITY ?? 5), uid: 'lookup' })
      .keyBy((record) => record.key)
      .process<number>(
        {
          open(context) {
            sum = context.getState(valueState<number>('sum'));
          },
          processElement(record, _context, out) {
            const next = (sum.value() ?? 0) + record.amount;
            sum.update(next);
            out.collect(next);
          },
        },
        { uid: 'sum' },
      )
      .sinkTo(discardingSink<number>(), { uid: 'discard' });
  },
});
