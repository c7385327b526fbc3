import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BroadcastProcessFunction, KeyedBroadcastProcessFunction } from '../../../../src/core/functions/broadcast-process-functions.ts';
import { mapState, valueState } from '../../../../src/core/state/state-descriptors.ts';
import { CoBroadcastWithKeyedOperator, CoBroadcastWithNonKeyedOperator } from '../../../../src/runtime/operators/co-broadcast-operators.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { OperatorHarness } from './operator-harness.ts';

interface Event {
  user: string;
  amount: number;
}
const limits = mapState<string, number>('limits');
const other = mapState<string, number>('other');
const total = valueState<number>('total');

const keyed: KeyedBroadcastProcessFunction<string, Event, [string, number], string> = {
  processElement(event, context, out) {
    const state = context.getBroadcastState(limits);
    const limit = state.get('default') ?? Number.POSITIVE_INFINITY;
    assert.equal('put' in state, false, 'read only on the keyed side');
    out.collect(`${context.getCurrentKey()} ${event.amount > limit ? 'over' : 'within'} ${limit}`);
  },
  processBroadcastElement([name, limit], context, out) {
    context.getBroadcastState(limits).put(name, limit);
    context.applyToKeyedState(total, (key, state) => {
      out.collect(`reset ${key} from ${state.value()}`);
      state.clear();
    });
  },
};

function keyedHarness(operatorState?: OperatorStateBackend) {
  return new OperatorHarness(new CoBroadcastWithKeyedOperator(keyed, (event: Event) => event.user, [limits]), { operatorState });
}

test('the keyed side reads the broadcast state; the broadcast side writes it and acts on every key', async () => {
  const harness = await keyedHarness().open();
  assert.deepEqual((await harness.process([{ user: 'a', amount: 5 }])).records, ['a within Infinity']);
  for (const user of ['a', 'b']) {
    harness.backend.setCurrentKey(user);
    harness.backend.getState(total).update(user === 'a' ? 1 : 2);
  }
  assert.deepEqual((await harness.process2([['default', 3]])).records.sort(), ['reset a from 1', 'reset b from 2'], 'key by key, in key group order');
  assert.deepEqual((await harness.process([{ user: 'b', amount: 5 }])).records, ['b over 3']);
  assert.deepEqual([...harness.backend.keysOf('total')], [], 'cleared through applyToKeyedState');
});

test('broadcast state comes back from a checkpoint at any parallelism: new subtask i gets old subtask i mod the old parallelism', async () => {
  const old = await Promise.all([0, 1].map((subtask) => keyedHarness().open(subtask, 2)));
  for (const [subtask, harness] of old.entries()) await harness.process2([['default', 10 + subtask]]);
  const snapshots = old.map((harness) => {
    harness.operator.snapshotState(1);
    return harness.operatorState.snapshot();
  });
  const restored = await Promise.all([0, 1, 2].map((subtask) => keyedHarness(OperatorStateBackend.restoreFor(snapshots, 3, subtask)).open(subtask, 3)));
  const limitsSeen = [];
  for (const harness of restored) limitsSeen.push((await harness.process([{ user: 'x', amount: 0 }])).records[0]);
  assert.deepEqual(limitsSeen, ['x within 10', 'x within 11', 'x within 10']);
});

test('a descriptor the broadcast stream was not given is named in the error', async () => {
  const harness = await new OperatorHarness(
    new CoBroadcastWithKeyedOperator<string, Event, number, string>(
      {
        processElement(_event, context) {
          context.getBroadcastState(other);
        },
        processBroadcastElement() {},
      },
      (event: Event) => event.user,
      [limits],
    ),
  ).open();
  await assert.rejects(
    async () => harness.process([{ user: 'a', amount: 1 }]),
    /asks for broadcast state "other", but its broadcast stream was given "limits"/,
  );
});

test('without keys: the main side reads, the broadcast side writes', async () => {
  const fn: BroadcastProcessFunction<number, number, string> = {
    processElement(value, context, out) {
      out.collect(`${value}x${context.getBroadcastState(limits).get('factor') ?? 1}`);
    },
    processBroadcastElement(factor, context) {
      context.getBroadcastState(limits).put('factor', factor);
    },
  };
  const harness = await new OperatorHarness(new CoBroadcastWithNonKeyedOperator(fn, [limits])).open();
  assert.deepEqual((await harness.process([2])).records, ['2x1']);
  await harness.process2([3]);
  assert.deepEqual((await harness.process([2])).records, ['2x3']);
});
