import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeyedStream, SingleOutputStreamOperator } from '../../../src/api/data-stream.ts';
import { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { TumblingEventTimeWindows } from '../../../src/api/windowing/tumbling-windows.ts';
import { dataGenSource } from '../../../src/connectors/datagen/datagen-source.ts';
import { WatermarkStrategy } from '../../../src/core/event-time/watermark-strategy.ts';
import type { StreamOperator } from '../../../src/core/operator/stream-operator.ts';
import { valueState } from '../../../src/core/state/state-descriptors.ts';
import type { KeyLike } from '../../../src/core/state/state-key.ts';
import type { ValueState } from '../../../src/core/state/state-types.ts';
import type { OperatorNode } from '../../../src/graph/stream-graph.ts';
import { compositeKeySelector, decodeKey, encodeCompositeKey } from '../../../src/state/composite-key.ts';
import { assignToKeyGroup } from '../../../src/state/key-group-range-assignment.ts';
import { OperatorHarness } from '../runtime/operators/operator-harness.ts';

interface Order {
  region: string;
  account: number;
  ts: number;
}
const order = (region: string, account: number, ts = 0): Order => ({ region, account, ts });

function operatorOf<K extends KeyLike, R>(
  key: (order: Order) => K,
  build: (keyed: KeyedStream<Order, K>) => SingleOutputStreamOperator<R>,
): StreamOperator<Order, R> {
  const env = new StreamExecutionEnvironment();
  const strategy = WatermarkStrategy.forMonotonousTimestamps<Order>().withTimestampAssigner((o) => o.ts);
  build(env.fromSource(dataGenSource<Order>({ count: 1, generate: () => order('eu', 1) }), { watermarkStrategy: strategy }).keyBy(key));
  return (env.graph.nodes.at(-1) as OperatorNode).createOperator() as StreamOperator<Order, R>;
}

test('a tuple key: state per tuple, and getCurrentKey() gives the tuple back', async () => {
  let count: ValueState<number>;
  const operator = operatorOf(
    (o) => [o.region, o.account] as const,
    (keyed) =>
      keyed.process<[KeyLike, number]>({
        open(context) {
          count = context.getState(valueState<number>('count'));
        },
        processElement(_o, context, out) {
          const next = (count.value() ?? 0) + 1;
          count.update(next);
          out.collect([context.getCurrentKey(), next]);
        },
      }),
  );
  const h = await new OperatorHarness(operator).open();
  const out = await h.process([order('eu', 1), order('eu', 2), order('eu', 1), order('us', 1)]);
  assert.deepEqual(out.records, [
    [['eu', 1], 1],
    [['eu', 2], 1],
    [['eu', 1], 2],
    [['us', 1], 1],
  ]);
});

test('a record key is the same key whatever its field order; bigints survive; a window gets its key back', async () => {
  const a = encodeCompositeKey({ region: 'eu', account: 7n });
  const b = encodeCompositeKey({ account: 7n, region: 'eu' });
  assert.equal(a, b);
  assert.deepEqual(decodeKey(a), { account: 7n, region: 'eu' });
  assert.equal(assignToKeyGroup(a, 128), assignToKeyGroup(b, 128));
  assert.equal(compositeKeySelector((o: Order) => o.region)(order('x', 1)), 'x', 'primitive keys are kept as they are');
  const windows = operatorOf(
    (o) => ({ region: o.region }),
    (keyed) =>
      keyed.window(TumblingEventTimeWindows.of(1000)).process<string>({
        process(key, _context, elements, out) {
          out.collect(`${JSON.stringify(key)} ${[...elements].length}`);
        },
      }),
  );
  const h = await new OperatorHarness(windows).open();
  const input = [order('eu', 1, 10), order('eu', 2, 20), order('us', 3, 30)];
  await h.process(
    input,
    input.map((o) => o.ts),
  );
  assert.deepEqual([...(await h.watermark(999)).records].sort(), ['{"region":"eu"} 2', '{"region":"us"} 1']);
});

test('what cannot be a key part is refused by name', () => {
  const select = compositeKeySelector((o: Order) => [o.region, { nested: true }] as unknown as KeyLike);
  assert.throws(() => select(order('eu', 1)), /a key selector returned \["eu",\{"nested":true\}\]: a part is a nested object or array/);
  assert.throws(() => compositeKeySelector(() => ({}))(order('eu', 1)), /an empty record/);
  assert.throws(() => compositeKeySelector(() => [Number.NaN])(order('eu', 1)), /returned NaN, which cannot be a key/);
});
