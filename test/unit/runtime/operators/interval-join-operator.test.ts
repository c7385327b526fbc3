import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SingleOutputStreamOperator } from '../../../../src/api/data-stream.ts';
import { StreamExecutionEnvironment } from '../../../../src/api/stream-execution-environment.ts';
import { dataGenSource } from '../../../../src/connectors/datagen/datagen-source.ts';
import { WatermarkStrategy } from '../../../../src/core/event-time/watermark-strategy.ts';
import { OutputTag } from '../../../../src/core/functions/output-tag.ts';
import type { KeyedContext, OnTimerContext } from '../../../../src/core/functions/process-functions.ts';
import type { StreamOperator } from '../../../../src/core/operator/stream-operator.ts';
import { valueState } from '../../../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../../../src/core/state/state-types.ts';
import type { OperatorNode } from '../../../../src/graph/stream-graph.ts';
import { OperatorHarness } from './operator-harness.ts';

interface Order {
  id: string;
  key: string;
  ts: number;
}
interface Payment {
  id: string;
  key: string;
  ts: number;
}

function twoInputOperator<R>(build: (env: StreamExecutionEnvironment) => SingleOutputStreamOperator<R>): () => StreamOperator<Order, R> {
  const env = new StreamExecutionEnvironment();
  build(env);
  return (env.graph.nodes.at(-1) as OperatorNode).createOperator as () => StreamOperator<Order, R>;
}

function sources(env: StreamExecutionEnvironment) {
  const strategy = WatermarkStrategy.forMonotonousTimestamps<Order>().withTimestampAssigner((record) => record.ts);
  const orders = env.fromSource(dataGenSource<Order>({ count: 1, generate: () => ({ id: 'o', key: 'a', ts: 0 }) }), { watermarkStrategy: strategy });
  const payments = env.fromSource(dataGenSource<Payment>({ count: 1, generate: () => ({ id: 'p', key: 'a', ts: 0 }) }), { watermarkStrategy: strategy });
  return { orders, payments };
}

const order = (id: string, key: string, ts: number): Order => ({ id, key, ts });
const payment = (id: string, key: string, ts: number): Payment => ({ id, key, ts });
const stamps = (records: { ts: number }[]) => records.map((record) => record.ts);

const lateOrders = new OutputTag<Order>('late-orders');
const joinBetween = (lower: number | string, upper: number | string, exclusive = false) =>
  twoInputOperator((env) => {
    const { orders, payments } = sources(env);
    let joined = orders
      .keyBy((o) => o.key)
      .intervalJoin(payments.keyBy((p) => p.key))
      .between(lower, upper)
      .sideOutputLeftLateData(lateOrders);
    if (exclusive) joined = joined.lowerBoundExclusive().upperBoundExclusive();
    return joined.process<string>({
      processElement(left, right, context, out) {
        out.collect(`${left.id}+${right.id}@${context.timestamp()}`);
      },
    });
  });

test('interval join: pairs of a key whose timestamps lie within the bounds, in either arrival order, with the later timestamp', async () => {
  const harness = await new OperatorHarness(joinBetween(-100, 200)()).open();
  const orders = [order('o1', 'a', 1000), order('o2', 'b', 1000)];
  assert.deepEqual((await harness.process(orders, stamps(orders))).records, []);
  const payments = [payment('p1', 'a', 900), payment('p2', 'a', 1200), payment('p3', 'a', 1201), payment('p4', 'b', 899), payment('p5', 'a', 1100)];
  const joined = await harness.process2(payments, stamps(payments));
  assert.deepEqual(joined.records, ['o1+p1@1000', 'o1+p2@1200', 'o1+p5@1100']);
  assert.deepEqual(joined.timestamps, [1000, 1200, 1100]);
  const later = [order('o3', 'a', 1250)];
  assert.deepEqual((await harness.process(later, stamps(later))).records.sort(), ['o3+p2@1250', 'o3+p3@1250'], 'p5 (1100) is more than 100 ms before o3');
});

test('exclusive bounds leave out the ends; bounds in text', async () => {
  const harness = await new OperatorHarness(joinBetween('-100ms', '200ms', true)()).open();
  const orders = [order('o1', 'a', 1000)];
  await harness.process(orders, stamps(orders));
  const payments = [payment('p1', 'a', 900), payment('p2', 'a', 901), payment('p3', 'a', 1199), payment('p4', 'a', 1200)];
  assert.deepEqual((await harness.process2(payments, stamps(payments))).records, ['o1+p2@1000', 'o1+p3@1199']);
});

test('buffers are cleaned up as the watermark passes; records behind the watermark are late (side output or counted)', async () => {
  const harness = await new OperatorHarness(joinBetween(-100, 200)()).open();
  const orders = [order('o1', 'a', 1000)];
  await harness.process(orders, stamps(orders));
  const payments = [payment('p1', 'a', 1000)];
  await harness.process2(payments, stamps(payments));
  await harness.watermark(1200); // o1 kept up to 1000 + 200; p1 up to 1000 + 100
  assert.ok(harness.backend.isEmpty(), 'both buffers and their timers are gone');
  const late = [order('o0', 'a', 1199)];
  await harness.process(late, stamps(late));
  assert.deepEqual(harness.sideOutputs.get('late-orders'), [{ record: late[0], timestamp: 1199 }]);
  const latePayment = [payment('p0', 'a', 10)];
  await harness.process2(latePayment, stamps(latePayment));
  assert.equal(harness.counters.get('numLateRecordsDropped'), 1, 'the right side has no late output: counted');
});

test('interval join buffers survive a snapshot and restore', async () => {
  const create = joinBetween(0, 500);
  const before = await new OperatorHarness(create()).open();
  const orders = [order('o1', 'a', 1000), order('o2', 'a', 1400)];
  await before.process(orders, stamps(orders));
  await before.watermark(1100);
  const after = await new OperatorHarness(create(), { snapshots: [before.snapshot()] }).open();
  const payments = [payment('p1', 'a', 1450)];
  assert.deepEqual((await after.process2(payments, stamps(payments))).records, ['o1+p1@1450', 'o2+p1@1450']);
});

test('connect + keyBy: a keyed co-process function shares keyed state and event-time timers between both inputs', async () => {
  const create = twoInputOperator((env) => {
    const { orders, payments } = sources(env);
    let paid: ValueState<number>;
    return orders
      .connect(payments)
      .keyBy(
        (o) => o.key,
        (p) => p.key,
      )
      .process<string>({
        open(context) {
          paid = context.getState(valueState<number>('paid'));
        },
        processElement1(value, context: KeyedContext<string>, out) {
          context.timerService.registerEventTimeTimer(value.ts + 1000);
          out.collect(`order ${value.id} of ${context.getCurrentKey()}, paid ${paid.value() ?? 0}`);
        },
        processElement2(_value, _context, _out) {
          paid.update((paid.value() ?? 0) + 1);
        },
        onTimer(timestamp, context: OnTimerContext<string>, out) {
          out.collect(`${context.timeDomain()} timer ${timestamp} of ${context.getCurrentKey()}: paid ${paid.value() ?? 0}`);
        },
      });
  });
  const harness = await new OperatorHarness(create()).open();
  const payments = [payment('p1', 'a', 10), payment('p2', 'a', 20), payment('p3', 'b', 30)];
  await harness.process2(payments, stamps(payments));
  const orders = [order('o1', 'a', 100), order('o2', 'b', 200)];
  const out = await harness.process(orders, stamps(orders));
  assert.deepEqual(out.records, ['order o1 of a, paid 2', 'order o2 of b, paid 1']);
  assert.deepEqual(out.timestamps, [100, 200]);
  const fired = await harness.watermark(1100);
  assert.deepEqual(fired.records, ['event timer 1100 of a: paid 2']);
  assert.deepEqual(fired.timestamps, [1100]);
});

test('side outputs from a process function on a stream that is not keyed; timers there are a clear error', async () => {
  const small = new OutputTag<number>('small');
  const create = twoInputOperator(
    (env) =>
      sources(env).orders.process<string>({
        processElement(value, context, out) {
          if (value.ts < 100) context.output(small, value.ts);
          else out.collect(value.id);
          if (value.id === 'timer') context.timerService.registerEventTimeTimer(1);
        },
      }) as SingleOutputStreamOperator<string>,
  );
  const harness = await new OperatorHarness(create()).open();
  const input = [order('o1', 'a', 50), order('o2', 'a', 150)];
  const out = await harness.process(input, stamps(input));
  assert.deepEqual(out.records, ['o2']);
  assert.deepEqual(harness.sideOutputs.get('small'), [{ record: 50, timestamp: 50 }]);
  await assert.rejects(
    async () => harness.process([order('timer', 'a', 500)], [500]),
    (error: Error & { code?: string }) => error.code === 'TIMERS_NEED_KEYED_STREAM' && /keyed streams/.test(error.message),
  );
});
