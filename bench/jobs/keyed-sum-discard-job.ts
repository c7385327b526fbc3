/** The engine benchmark's job: generator -> keyBy -> keyed running sum -> discarding sink. BENCH_COUNT records. */
import { defineJob } from '../../src/api/define-job.ts';
import { dataGenSource } from '../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../src/connectors/discarding-sink.ts';
import { valueState } from '../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../src/core/state/state-types.ts';

export default defineJob({
  name: 'bench-keyed-sum',
  build(env) {
    let sum: ValueState<number>;
    env
      .fromSource(dataGenSource({ count: Number(process.env.BENCH_COUNT ?? 1_000_000), keys: 1000 }), { uid: 'generator' })
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
