import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { asyncWaitSettings } from '../../../../src/api/async-data-stream.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';
import type { AsyncFunction } from '../../../../src/core/functions/async-function.ts';
import type { RecordErrorPolicy } from '../../../../src/core/functions/dead-letter.ts';
import { AsyncWaitOperator } from '../../../../src/runtime/operators/async-wait-operator.ts';
import { OperatorStateBackend } from '../../../../src/state/operator-state-backend.ts';
import { type Emission, OperatorHarness } from './operator-harness.ts';

/** An async function whose calls the test resolves by hand, by record. */
function scripted() {
  const pending = new Map<number, { resolve: (results: number[]) => void; reject: (error: unknown) => void; signal: AbortSignal }>();
  const calls: number[] = [];
  const fn = (record: number, { signal }: { signal: AbortSignal }) =>
    new Promise<number[]>((resolve, reject) => {
      calls.push(record);
      pending.set(record, { resolve, reject, signal });
    });
  return { fn, pending, calls, resolve: (record: number) => pending.get(record)?.resolve([record * 10]) };
}

async function harnessOf<OUT>(
  fn: AsyncFunction<number, OUT>,
  options: {
    ordered?: boolean;
    capacity?: number;
    timeout?: number;
    retry?: Parameters<typeof asyncWaitSettings>[0]['retry'];
    onError?: RecordErrorPolicy;
    operatorState?: OperatorStateBackend;
  } = {},
) {
  const settings = asyncWaitSettings(
    { timeout: options.timeout ?? 10_000, capacity: options.capacity, retry: options.retry },
    'lookup',
    options.ordered ?? true,
  );
  if (options.onError !== undefined) settings.onError = options.onError;
  const harness = new OperatorHarness(new AsyncWaitOperator<number, OUT>(fn, settings), { operatorState: options.operatorState });
  await harness.open();
  return harness;
}

/** Lets promise callbacks run, then the operator's mails. */
async function settle(harness: OperatorHarness<number, unknown>): Promise<void> {
  await sleep(1);
  await harness.runMails();
}

const flat = (emitted: Emission[]) => emitted.flatMap((e) => ('watermark' in e ? [`wm ${e.watermark}`] : e.records.map(String)));

test('orderedWait emits in the input order whatever order the answers come in, and a watermark only after the records before it', async () => {
  const io = scripted();
  const harness = await harnessOf(io.fn);
  await harness.process([1, 2], [100, 200]);
  await harness.watermark(150);
  await harness.process([3], [300]);
  io.resolve(3);
  io.resolve(2);
  await settle(harness);
  assert.deepEqual(flat(harness.emitted), [], 'nothing leaves before record 1');
  io.resolve(1);
  await settle(harness);
  assert.deepEqual(flat(harness.emitted), ['10', '20', 'wm 150', '30']);
  assert.deepEqual(harness.emitted[0], { records: [10, 20], timestamps: [100, 200] }, 'results carry their records timestamps');
});

test('unorderedWait emits as answers come, but never across a watermark', async () => {
  const io = scripted();
  const harness = await harnessOf(io.fn, { ordered: false });
  await harness.process([1, 2], [100, 200]);
  await harness.watermark(250);
  await harness.watermark(260); // replaces 250: no record between them
  await harness.process([3, 4], [300, 400]);
  io.resolve(2);
  io.resolve(4);
  await settle(harness);
  assert.deepEqual(flat(harness.emitted), ['20'], 'record 4 waits behind the watermark');
  io.resolve(1);
  await settle(harness);
  assert.deepEqual(flat(harness.emitted), ['20', '10', 'wm 260', '40']);
  io.resolve(3);
  await settle(harness);
  assert.deepEqual(flat(harness.emitted), ['20', '10', 'wm 260', '40', '30']);
});

test('a full capacity holds the input back until a record is out (back pressure)', async () => {
  const io = scripted();
  const harness = await harnessOf(io.fn, { capacity: 2 });
  const processing = harness.process([1, 2, 3, 4]);
  await sleep(5);
  assert.deepEqual(io.calls, [1, 2], 'only two in flight');
  io.resolve(2);
  await sleep(5);
  assert.deepEqual(io.calls, [1, 2], 'ordered: a later answer frees nothing');
  io.resolve(1);
  await sleep(5);
  assert.deepEqual(io.calls, [1, 2, 3, 4]);
  await processing;
  assert.deepEqual(flat(harness.emitted), ['10', '20']);
  io.resolve(3);
  io.resolve(4);
  const ended = await harness.endInput();
  assert.deepEqual(ended.records, []);
  assert.deepEqual(flat(harness.emitted), ['10', '20', '30', '40'], 'the end of input waits for every answer');
});

test('a timeout aborts the call; the timeout function gives the results, or the error policy takes the record', async () => {
  const io = scripted();
  const withFallback = await harnessOf({ asyncInvoke: io.fn, timeout: (record: number) => [-record] }, { timeout: 20 });
  await withFallback.process([7]);
  await sleep(60);
  await withFallback.runMails();
  assert.deepEqual(flat(withFallback.emitted), ['-7']);
  assert.equal(io.pending.get(7)?.signal.aborted, true, 'the call was told to stop');
  io.resolve(7); // too late: ignored
  await settle(withFallback);
  assert.deepEqual(flat(withFallback.emitted), ['-7']);
  assert.equal(withFallback.counters.get('asyncTimeouts'), 1);

  const failing = await harnessOf(scripted().fn, { timeout: 20 });
  await failing.process([8]);
  await sleep(60);
  await assert.rejects(failing.runMails(), (error: unknown) => {
    assert.ok(error instanceof WeirError);
    assert.equal(error.code, 'RECORD_FAILED');
    assert.match(error.message, /operator "test operator".*did not resolve within its timeout of 20 ms/);
    return true;
  });

  const skipping = await harnessOf(scripted().fn, { timeout: 20, onError: 'skip' });
  await skipping.process([9]);
  await sleep(60);
  await skipping.runMails();
  assert.deepEqual(flat(skipping.emitted), []);
  assert.equal(skipping.counters.get('recordsSkipped'), 1);
});

test('retries: errors and unwanted results are tried again with a growing delay, up to maxAttempts, within the timeout', async () => {
  const attempts: number[] = [];
  const started: number[] = [];
  const flaky = async (record: number, { attempt }: { attempt: number }) => {
    attempts.push(attempt);
    started.push(performance.now());
    if (record === 1 && attempt < 3) throw new Error('503');
    if (record === 2 && attempt < 2) return [];
    if (record === 3) throw new Error('always');
    return [record];
  };
  const harness = await harnessOf(flaky, {
    onError: 'skip',
    retry: {
      maxAttempts: 3,
      delay: { initial: 10, max: 40, multiplier: 2 },
      ifResult: (results) => results.length === 0,
      ifError: (error) => (error as Error).message !== 'never',
    },
  });
  await harness.process([1]);
  await harness.endInput();
  assert.deepEqual(attempts, [1, 2, 3]);
  assert.ok((started[2] as number) - (started[1] as number) >= 18, 'the second retry waits twice the first');
  await harness.process([2, 3]);
  await harness.endInput();
  assert.deepEqual(flat(harness.emitted), ['1', '2']);
  assert.equal(harness.counters.get('recordsSkipped'), 1, 'record 3 ran out of attempts');
  assert.equal(harness.counters.get('asyncRetries'), 2 + 1 + 2);

  const notRetried = await harnessOf(
    async () => {
      throw new Error('400');
    },
    { onError: 'skip', retry: { maxAttempts: 5, delay: 1, ifError: (error) => (error as Error).message !== '400' } },
  );
  await notRetried.process([1]);
  await notRetried.endInput();
  assert.equal(notRetried.counters.get('asyncRetries'), undefined, 'ifError said no');
});

test('a checkpoint keeps the records in flight; a restore, at another parallelism too, calls the function for them again', async () => {
  const io = scripted();
  const harness = await harnessOf(io.fn);
  await harness.process([1, 2, 3], [10, 20, 30]);
  io.resolve(2); // done but held behind 1: still in flight for the checkpoint
  await settle(harness);
  harness.operator.snapshotState(1);
  const snapshot = harness.operatorState.snapshot();
  await harness.operator.close();
  assert.equal(io.pending.get(1)?.signal.aborted, true, 'closing stops the calls');

  const again = scripted();
  const halves = [0, 1].map((subtask) => OperatorStateBackend.restoreFor([snapshot], 2, subtask));
  const restored = await Promise.all(halves.map((operatorState) => harnessOf(again.fn, { operatorState })));
  assert.deepEqual([...again.calls].sort(), [1, 2, 3], 'every record in flight is asked about again, once');
  for (const record of [1, 2, 3]) again.resolve(record);
  for (const one of restored) await one.endInput();
  const out = restored.flatMap((one) => one.emitted.flatMap((e) => ('records' in e ? e.records.map((r, i) => [r, e.timestamps?.[i]]) : [])));
  assert.deepEqual(out.sort(), [
    [10, 10],
    [20, 20],
    [30, 30],
  ]);
});

test('the options are checked, each bad value named', () => {
  const bad = (options: object, pattern: RegExp) =>
    assert.throws(
      () => asyncWaitSettings(options as never, 'lookup', true),
      (error: unknown) => error instanceof WeirError && pattern.test(error.message),
    );
  bad({}, /operator "lookup" timeout: an async operator needs a timeout/);
  bad({ timeout: 0 }, /timeout: must be more than 0/);
  bad({ timeout: 'soon' }, /timeout: "soon" is not a duration/);
  bad({ timeout: 100, capacity: 0 }, /capacity: must be a whole number from 1/);
  bad({ timeout: 100, retry: { maxAttempts: 0, delay: 1 } }, /retry.maxAttempts: must be a whole number of at least 1/);
  bad({ timeout: 100, retry: { maxAttempts: 2, delay: { initial: 100, max: 10 } } }, /retry.delay: needs multiplier >= 1 and max >= initial/);
  bad({ timeout: 100, retry: { maxAttempts: 2, delay: 1, ifError: true } }, /retry.ifError: must be a function/);
});

test('a function that does not resolve to an array fails the record with a clear message', async () => {
  const harness = await harnessOf((async () => 5) as never);
  await harness.process([1]);
  await assert.rejects(harness.endInput(), /must resolve to an array of results \(\[\] for none, \[value\] for one\), not number/);
});

for (const ordered of [true, false]) {
  test(`${ordered ? 'orderedWait' : 'unorderedWait'}: the end of event time (a drained stop, the end of input) waits for every record in flight, whose results go out before it`, async () => {
    const io = scripted();
    const harness = await harnessOf(io.fn, { ordered });
    await harness.process([1, 2, 3], [100, 200, 300]);
    const ended = harness.watermark(Number.POSITIVE_INFINITY);
    let done = false;
    void ended.then(() => {
      done = true;
    });
    io.resolve(2);
    await sleep(5);
    assert.equal(done, false, 'still waiting for records 1 and 3');
    io.resolve(3);
    io.resolve(1);
    await ended;
    const out = flat(harness.emitted);
    assert.deepEqual(out.slice(0, 3).sort(), ['10', '20', '30']);
    if (ordered) assert.deepEqual(out.slice(0, 3), ['10', '20', '30']);
    assert.deepEqual(out.slice(3), ['wm Infinity'], 'the end of event time after every result');
  });
}
