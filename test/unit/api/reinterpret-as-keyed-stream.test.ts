import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseEnvironmentConfig } from '../../../src/core/config/environment-config.ts';
import { buildStreamGraph } from '../../../src/graph/job.ts';
import { buildJobGraph } from '../../../src/graph/job-graph.ts';
import { DataStreamUtils, dataGenSource, defineJob, discardingSink, type ValueState, valueState, WeirError } from '../../../src/index.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { assignToKeyGroup, computeKeyGroupRangeForOperatorIndex } from '../../../src/state/key-group-range-assignment.ts';
import { JobTestDriver } from '../../../src/testing/job-test-driver.ts';

interface Entry {
  seq: number;
  key: string;
  amount: number;
}

/** keyBy -> map (keeps the key) -> reinterpret -> a second keyed operator, chained: no second exchange. */
function jobWith(reinterpretedKey: (entry: Entry & { doubled: number }) => string, parallelism?: number) {
  return defineJob({
    name: 'reinterpret',
    build(env) {
      let total: ValueState<number>;
      const enriched = env
        .fromSource(dataGenSource<Entry>({ count: 2000, keys: 20 }), { uid: 'entries' })
        .keyBy((entry) => entry.key)
        .map((entry) => ({ ...entry, doubled: entry.amount * 2 }), { uid: 'double' });
      DataStreamUtils.reinterpretAsKeyedStream(enriched, reinterpretedKey)
        .process<number>(
          {
            open(context) {
              total = context.getState(valueState<number>('total'));
            },
            processElement(entry, _context, out) {
              const next = (total.value() ?? 0) + entry.doubled;
              total.update(next);
              out.collect(next);
            },
          },
          { uid: 'totals', ...(parallelism === undefined ? {} : { parallelism }) },
        )
        .sinkTo(discardingSink(), { uid: 'out' });
    },
  });
}

test('a stream reinterpreted as keyed chains into its input: one exchange (the keyBy), and the operator after it keeps keyed state', async () => {
  const job = jobWith((entry) => entry.key);
  const graph = buildJobGraph('reinterpret', buildStreamGraph(job), parseEnvironmentConfig({ parallelism: 2 }));
  assert.deepEqual(
    graph.vertices.map((vertex) => vertex.name),
    ['datagen', 'map -> process -> discarding sink'],
  );
  assert.equal(graph.edges.length, 1);
  const driver = await JobTestDriver.create(job);
  await driver.pipeInput('entries', [
    { seq: 0, key: 'a', amount: 1 },
    { seq: 1, key: 'a', amount: 2 },
  ]);
  assert.deepEqual(driver.readOutput('out'), [2, 6]);
  assert.equal(driver.keyedState('totals', valueState<number>('total'), 'a').value(), 6);
});

test('a record at a subtask that does not own its key group is the partitioning of the user: KEY_NOT_PARTITIONED, naming the key and the fix', () => {
  const backend = new HeapKeyedStateBackend({
    maxParallelism: 128,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(128, 2, 0),
    operatorName: 'totals',
    reinterpreted: true,
  });
  const foreign = Array.from({ length: 100 }, (_, i) => `key-${i}`).find((key) => assignToKeyGroup(key, 128) >= 64) as string;
  assert.throws(
    () => backend.setCurrentKey(foreign),
    (error: unknown) =>
      error instanceof WeirError &&
      error.code === 'KEY_NOT_PARTITIONED' &&
      error.fault === 'user' &&
      /operator "totals" reads a stream reinterpreted as keyed, but key "key-\d+" \(key group \d+\) arrived at the subtask of key groups 0-63/.test(
        error.message,
      ) &&
      /keyGroupPartitioner/.test(error.hint ?? ''),
  );
});

test('what cannot hold the contract is refused when the job is built', () => {
  assert.throws(
    () => buildJobGraph('reinterpret', buildStreamGraph(jobWith((entry) => entry.key, 3)), parseEnvironmentConfig({ parallelism: 2 })),
    (error: unknown) => error instanceof WeirError && error.code === 'REINTERPRET_NOT_FORWARD' && /reaches it by rebalance/.test(error.message),
  );
  const fromDatagen = defineJob({
    name: 'datagen-reinterpreted',
    build(env) {
      DataStreamUtils.reinterpretAsKeyedStream(env.fromSource(dataGenSource()), (record) => record.key).sinkTo(discardingSink());
    },
  });
  assert.throws(() => buildStreamGraph(fromDatagen), /source "datagen" cannot say which key group each of its splits holds/);
});
