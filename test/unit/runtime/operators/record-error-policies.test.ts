/** What map, filter, flatMap, process and keyed process do with a record their function throws on, under each policy. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import { DEAD_LETTER_TAG, type DeadLetterRecord } from '../../../../src/core/functions/dead-letter.ts';
import { valueState } from '../../../../src/core/state/state-descriptors.ts';
import type { ValueState } from '../../../../src/core/state/state-types.ts';
import { KeyedCoProcessOperator } from '../../../../src/runtime/operators/keyed-co-process-operator.ts';
import { KeyedProcessOperator } from '../../../../src/runtime/operators/keyed-process-operator.ts';
import { CoProcessOperator, ProcessOperator } from '../../../../src/runtime/operators/process-operator.ts';
import { FilterOperator, FlatMapOperator, MapOperator } from '../../../../src/runtime/operators/stateless-operators.ts';
import { OperatorHarness } from './operator-harness.ts';

const bad = (n: number) => n % 3 === 1; // 1, 4, 7
const check = (n: number) => {
  if (bad(n)) throw new TypeError(`bad ${n}`);
  return n;
};
const input = [0, 1, 2, 3, 4, 5, 6, 7, 8];
const stamps = input.map((n) => 1000 + n);
const good = input.filter((n) => !bad(n));

test("map 'skip': the good records with their timestamps, the bad ones counted", async () => {
  const h = await new OperatorHarness(new MapOperator(check, 'skip')).open();
  const out = await h.process(input, stamps);
  assert.deepEqual(out.records, good);
  assert.deepEqual(
    out.timestamps,
    good.map((n) => 1000 + n),
  );
  assert.equal(h.counters.get('recordsSkipped'), 3);
  // A batch without errors takes the fast path and keeps its timestamps as they are.
  const clean = await h.process([0, 2], [5, 6]);
  assert.deepEqual(clean, { records: [0, 2], timestamps: [5, 6] });
});

test("map 'dead-letter': the bad records go to the dead-letter side output with the error", async () => {
  const h = await new OperatorHarness(new MapOperator(check, { deadLetterTopic: 'dlq' })).open();
  const out = await h.process(input, stamps);
  assert.deepEqual(out.records, good);
  const letters = (h.sideOutputs.get(DEAD_LETTER_TAG) ?? []).map((entry) => entry.record as DeadLetterRecord);
  assert.deepEqual(
    letters.map((letter) => [
      Buffer.from(letter.value as Uint8Array).toString(),
      letter.timestamp,
      letter.errorClass,
      letter.errorMessage,
      letter.operatorUid,
      letter.topic,
    ]),
    [
      ['1', 1001, 'TypeError', 'bad 1', 'test', 'dlq'],
      ['4', 1004, 'TypeError', 'bad 4', 'test', 'dlq'],
      ['7', 1007, 'TypeError', 'bad 7', 'test', 'dlq'],
    ],
  );
  assert.equal(h.counters.get('deadLetters'), 3);
});

test("map 'fail' (the default): RECORD_FAILED naming the operator, the record, its time and the throw's place", async () => {
  const h = await new OperatorHarness(new MapOperator(check)).open();
  await assert.rejects(h.process(input, stamps), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.equal(error.code, 'RECORD_FAILED');
    assert.match(
      error.message,
      /^operator "test operator" \(1\/1\) failed on a record \(event time 1001, value 1 bytes, hex 31, text "1"\): bad 1\n {4}at check \(.*record-error-policies\.test\.ts:\d+:\d+\)/,
    );
    assert.match(error.stack ?? '', /TypeError: bad 1/);
    return true;
  });
});

test("filter and flatMap 'skip': a record that throws emits nothing, even what flatMap yielded before throwing", async () => {
  const filter = await new OperatorHarness(new FilterOperator((n: number) => check(n) % 2 === 0, 'skip')).open();
  assert.deepEqual((await filter.process(input)).records, [0, 2, 6, 8]);
  assert.equal(filter.counters.get('recordsSkipped'), 3);
  const flatMap = await new OperatorHarness(
    new FlatMapOperator(function* (n: number) {
      yield n;
      check(n);
      yield n * 10;
    }, 'skip'),
  ).open();
  const out = await flatMap.process(input, stamps);
  assert.deepEqual(
    out.records,
    good.flatMap((n) => [n, n * 10]),
  );
  assert.deepEqual(
    out.timestamps,
    good.flatMap((n) => [1000 + n, 1000 + n]),
  );
});

test("process and keyed process 'skip': the output the call collected before throwing is dropped", async () => {
  const process = await new OperatorHarness(
    new ProcessOperator<number, number>(
      {
        processElement(n, _context, out) {
          out.collect(n);
          check(n);
        },
      },
      'skip',
    ),
  ).open();
  assert.deepEqual((await process.process(input, stamps)).records, good);
  let count: ValueState<number>;
  const keyed = await new OperatorHarness(
    new KeyedProcessOperator<string, number, number>(
      {
        open(context) {
          count = context.getState(valueState<number>('count'));
        },
        processElement(n, _context, out) {
          out.collect(n);
          check(n);
          count.update((count.value() ?? 0) + 1);
        },
      },
      () => 'one-key',
      { deadLetterTopic: 'dlq' },
    ),
  ).open();
  const out = await keyed.process(input, stamps);
  assert.deepEqual(out.records, good);
  assert.deepEqual(
    out.timestamps,
    good.map((n) => 1000 + n),
  );
  assert.equal(keyed.counters.get('deadLetters'), 3);
});

test('a WeirError of the engine thrown inside a function is not skipped', async () => {
  const h = await new OperatorHarness(
    new MapOperator((n: number) => {
      if (n === 2) throw new WeirError('NO_CURRENT_KEY', 'no key');
      return n;
    }, 'skip'),
  ).open();
  await assert.rejects(h.process(input), /no key/);
});

test("co-process 'skip' and keyed co-process 'dead-letter': either input's bad records", async () => {
  const co = await new OperatorHarness(
    new CoProcessOperator<number, number, number>(
      {
        processElement1(n, _context, out) {
          out.collect(check(n));
        },
        processElement2(n, _context, out) {
          out.collect(-check(n));
        },
      },
      'skip',
    ),
  ).open();
  assert.deepEqual((await co.process(input)).records, good);
  assert.deepEqual(
    (await co.process2(input)).records,
    good.map((n) => -n),
  );
  assert.equal(co.counters.get('recordsSkipped'), 6);
  const keyed = await new OperatorHarness(
    new KeyedCoProcessOperator<string, number, number, number>(
      {
        processElement1(n, _context, out) {
          out.collect(check(n));
        },
        processElement2(n, _context, out) {
          out.collect(check(n));
        },
      },
      () => 'a',
      () => 'b',
      { deadLetterTopic: 'dlq' },
    ),
  ).open();
  assert.deepEqual((await keyed.process2(input, stamps)).records, good);
  assert.equal(keyed.sideOutputs.get(DEAD_LETTER_TAG)?.length, 3);
});
