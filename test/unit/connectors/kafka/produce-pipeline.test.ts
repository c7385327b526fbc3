import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Reader, readRecordsBatch } from '@platformatic/kafka';
import { COALESCE_BYTES, MAX_PRODUCE_IN_FLIGHT, ProducePipeline } from '../../../../src/connectors/kafka/produce-pipeline.ts';
import { BATCH_BYTES_LIMIT } from '../../../../src/connectors/kafka/record-accumulator.ts';
import { BATCH_HEADER_BYTES, type EncodedBatch } from '../../../../src/connectors/kafka/record-batch-builder.ts';

/** A request whose answer the test gives: resolve() or reject(error). */
function deferred() {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise((done) => setImmediate(done));
/** The partition every request of these tests carries. */
const P = ['t:0'];

test('requests go out at once, up to the limit counted from the oldest not acknowledged; reserve waits for room', async () => {
  const pipeline = new ProducePipeline(2);
  const answers = [deferred(), deferred(), deferred()];
  const sent: number[] = [];
  for (const index of [0, 1]) {
    await pipeline.reserve(P);
    pipeline.send(
      P,
      () => {
        sent.push(index);
        return answers[index]?.promise as Promise<void>;
      },
      async () => {},
    );
  }
  assert.deepEqual(sent, [0, 1]);
  let reserved = false;
  const third = pipeline.reserve(P).then(() => {
    reserved = true;
  });
  await tick();
  assert.equal(reserved, false, 'a third request waits while two are in flight');
  answers[1]?.resolve();
  await tick();
  await tick();
  assert.equal(reserved, false, 'the second acknowledged, the first not: still no room (the broker keeps the last batches only)');
  answers[0]?.resolve();
  await third;
  assert.equal(reserved, true);
  assert.equal(MAX_PRODUCE_IN_FLIGHT, 5);
});

test('a failed request is retried only after every request before it completed, and flush waits for all', async () => {
  const pipeline = new ProducePipeline();
  const events: string[] = [];
  const first = deferred();
  pipeline.send(
    P,
    () => first.promise.then(() => void events.push('first acknowledged')),
    async () => {},
  );
  pipeline.send(
    P,
    () => Promise.reject(new Error('OUT_OF_ORDER_SEQUENCE_NUMBER')),
    async () => void events.push('second retried'),
  );
  let flushed = false;
  const flushing = pipeline.flush().then(() => {
    flushed = true;
  });
  await tick();
  assert.deepEqual(events, [], 'the retry waits for the first request');
  assert.equal(flushed, false);
  first.resolve();
  await flushing;
  assert.deepEqual(events, ['first acknowledged', 'second retried']);
});

test('a failure no retry cures fails the pipeline: later sends, flush and reserve throw it; settle does not', async () => {
  const pipeline = new ProducePipeline();
  const fatal = new Error('PRODUCER_FENCED');
  pipeline.send(
    P,
    () => Promise.reject(fatal),
    () => Promise.reject(fatal),
  );
  let laterRetried = false;
  pipeline.send(
    P,
    () => Promise.reject(new Error('OUT_OF_ORDER_SEQUENCE_NUMBER')),
    async () => {
      laterRetried = true;
    },
  );
  await assert.rejects(pipeline.flush(), fatal);
  assert.equal(laterRetried, false, 'no retry after an earlier request failed for good');
  await assert.rejects(pipeline.reserve(P), fatal);
  assert.throws(() => pipeline.throwIfFailed(), fatal);
  await pipeline.settle();
});

/** The first byte of each value in the batches, in order. */
const firstBytes = (batches: EncodedBatch[]) =>
  batches.flatMap((batch) => readRecordsBatch(Reader.from(batch.bytes)).records.map((record) => record.value?.[0]));

test('records held while the pipeline is full are encoded at once and go out together, in order, a request at most about maxBytes', () => {
  const pipeline = new ProducePipeline(1);
  const record = (i: number, partition = 0) => ({ topic: 'out', partition, value: Buffer.alloc(50, i) }); // 57 bytes encoded
  pipeline.hold([record(0), record(1)]);
  pipeline.hold([record(2)]);
  assert.equal(pipeline.heldBytes, BATCH_HEADER_BYTES + 3 * 57, 'one batch: the header and three records');
  assert.deepEqual(firstBytes(pipeline.takeHeld(1000, {})), [0, 1, 2]);
  assert.equal(pipeline.heldBytes, 0);
  pipeline.hold([record(3, 0), record(4, 1)]);
  assert.deepEqual(firstBytes(pipeline.takeHeld(10, {})), [3], 'at least one batch, however large');
  assert.deepEqual(firstBytes(pipeline.takeHeld(1000, {})), [4]);
  assert.deepEqual(pipeline.takeHeld(1000, {}), []);
  assert.equal(pipeline.canSend(['out:0']), true);
});

test('held records gather until COALESCE_BYTES, whether or not a request is in flight, and a full request waits for room', async () => {
  const pipeline = new ProducePipeline(2);
  const record = (bytes: number) => ({ topic: 't', partition: 0, value: Buffer.alloc(bytes) });
  assert.equal(pipeline.shouldSendHeld, false, 'nothing held');
  pipeline.hold([record(100)]);
  assert.equal(pipeline.shouldSendHeld, false, 'nothing in flight: a small batch still gathers (the pre-commit flush sends it)');
  pipeline.hold([record(COALESCE_BYTES)]);
  assert.equal(pipeline.shouldSendHeld, true, 'COALESCE_BYTES held, nothing in flight');
  pipeline.takeHeld(BATCH_BYTES_LIMIT, {});
  const answers = [deferred(), deferred()];
  for (const answer of answers)
    pipeline.send(
      P,
      () => answer.promise,
      async () => {},
    );
  answers[0]?.resolve();
  await tick();
  await tick();
  pipeline.hold([record(1000)]);
  assert.equal(pipeline.shouldSendHeld, false, 'one in flight: small batches gather');
  pipeline.hold([record(COALESCE_BYTES)]);
  assert.equal(pipeline.shouldSendHeld, true, 'COALESCE_BYTES held, and room for a second request');
  pipeline.send(
    P,
    () => new Promise(() => {}),
    async () => {},
  );
  assert.equal(pipeline.shouldSendHeld, false, 'no room: the records wait for an answer');
  pipeline.hold([record(BATCH_BYTES_LIMIT)]);
  assert.equal(pipeline.shouldSendHeld, true, "a request's worth held: it goes out as soon as there is room (reserve waits)");
  answers[1]?.resolve();
});
