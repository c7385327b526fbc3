import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { parseEnvironmentConfig } from '../../../../src/core/config/environment-config.ts';
import { BatchSizeDebloater, batchSizeFor, type DebloatOptions, debloatOptions } from '../../../../src/runtime/io/batch-size-debloater.ts';
import type { ChannelMessage } from '../../../../src/runtime/io/channel-message.ts';
import { ChannelWriter } from '../../../../src/runtime/io/channel-writer.ts';
import type { RecordWriter } from '../../../../src/runtime/io/record-writer.ts';
import { SourceBatchSizer } from '../../../../src/runtime/tasks/source-batch-sizer.ts';

const options: DebloatOptions = { target: 1000, period: 200, samples: 20, minBatchSize: 8, maxBatchSize: 512 };

test('the batch size makes the batches in flight about target of processing, between the floor and batchSize', () => {
  // 250 records/s, 4 credits, 1 s: 4 batches of 63 records hold about a second of work.
  assert.equal(batchSizeFor(250, options, 4), 63);
  assert.equal(batchSizeFor(250, { ...options, target: 2000 }, 4), 125);
  assert.equal(batchSizeFor(250, options, 1), 250);
  // Fast: never above today's bound. Very slow (or stopped): never below one small batch.
  assert.equal(batchSizeFor(1_000_000, options, 4), 512);
  assert.equal(batchSizeFor(10, options, 4), 8);
  assert.equal(batchSizeFor(0, options, 4), 8);
  assert.equal(batchSizeFor(Number.POSITIVE_INFINITY, options, 4), 512);
});

test('the debloater changes the size once per full period of busy time, on an exponential average of the samples', () => {
  const debloater = new BatchSizeDebloater(options, 4);
  assert.equal(debloater.batchSize, 8, 'the smallest batch until the first measurement (a start into back pressure fills no channel)');
  assert.equal(debloater.throughput, undefined);
  debloater.add(0, 0); // no time: no sample
  assert.equal(debloater.batchSize, 8);
  debloater.add(5, 20); // the first batch consumed is the first sample: 5 records in 20 ms, 250 records/s
  assert.equal(debloater.throughput, 250);
  assert.equal(debloater.batchSize, 16, '63 fits 250 records/s, but the size at most doubles per update (a slow start)');
  debloater.add(25, 100); // then a full period: half of one changes nothing
  assert.equal(debloater.batchSize, 32, 'still warming up: one more doubling');
  debloater.add(25, 100); // 250 records/s again
  assert.equal(debloater.throughput, 250);
  assert.equal(debloater.batchSize, 63);
  // A faster period moves the average by 2 / (samples + 1), not all the way.
  debloater.add(500, 200); // 2500 records/s
  assert.ok(Math.abs((debloater.throughput as number) - (250 + (2 / 21) * 2250)) < 1e-9);
  assert.equal(debloater.batchSize, Math.round(((250 + (2 / 21) * 2250) * 1) / 4));
  // Many fast periods: back to the bound.
  for (let i = 0; i < 100; i++) debloater.add(10_000, 200);
  assert.equal(debloater.batchSize, 512);
});

test('a cold first batch holds the size down only until the next few batches show the real rate', () => {
  const debloater = new BatchSizeDebloater(options, 4);
  debloater.add(8, 50); // 8 records in 50 ms: 160 records/s, 4 batches of 40 a second
  assert.equal(debloater.batchSize, 16, '40 fits, grown at most twofold');
  const sizes: number[] = [];
  for (let i = 0; i < 10; i++) {
    debloater.add(32, 1); // then 32 records a ms
    sizes.push(debloater.batchSize);
  }
  assert.deepEqual(sizes.slice(0, 6), [32, 64, 128, 256, 512, 512], 'the rate over everything so far, after every batch, doubling up to it');
  assert.equal(debloater.batchSize, 512);
});

test('a consumer that takes its first batches at once, then slows (an async operator filling its queue), gets no large batch in flight', () => {
  const debloater = new BatchSizeDebloater(options, 4);
  debloater.add(8, 0.05); // the queue's free slots take the first batch at once: 160,000 records/s
  assert.equal(debloater.batchSize, 16, 'not 512: the size at most doubles');
  debloater.add(16, 0.1);
  assert.equal(debloater.batchSize, 32);
  debloater.add(32, 40); // then the queue is full: each record waits for a slot (800 records/s)
  // Everything so far: 56 records in 40.15 ms, about 1,400 records/s: 4 batches of about 350 a second.
  assert.equal(debloater.batchSize, 64);
  debloater.add(64, 80);
  // 120 records in 120 ms so far: about 250 a batch would fit; the doubling got it to 128, never to 512.
  assert.equal(debloater.batchSize, 128);
});

test('network.debloat: on by default with Flink-like settings; off gives no options; the floor is at most batchSize', () => {
  const defaults = parseEnvironmentConfig({});
  assert.deepEqual(defaults.network.debloat, { enabled: true, target: 1000, period: 200, samples: 20, minBatchSize: 8 });
  assert.deepEqual(debloatOptions(defaults), { target: 1000, period: 200, samples: 20, minBatchSize: 8, maxBatchSize: 512 });
  assert.equal(debloatOptions(parseEnvironmentConfig({ network: { debloat: { enabled: false } } })), undefined);
  assert.equal(debloatOptions(parseEnvironmentConfig({ batchSize: 4 }))?.minBatchSize, 4);
  assert.equal(parseEnvironmentConfig({ network: { debloat: { target: '2s' } } }).network.debloat.target, 2000);
  assert.throws(() => parseEnvironmentConfig({ network: { debloat: { target: 0 } } }), /network\.debloat\.target/);
});

/** performance.now() under the test’s control. */
function fakeClock(t: { after: (fn: () => void) => void }): { advance: (ms: number) => void } {
  let now = 1000;
  const mocked = mock.method(performance, 'now', () => now);
  t.after(() => mocked.mock.restore());
  return {
    advance: (ms) => {
      now += ms;
    },
  };
}

test('a channel whose receiver consumes slowly sends smaller batches: larger ones go out in pieces, one credit each', (t) => {
  const clock = fakeClock(t);
  const sent: ChannelMessage[] = [];
  let credited = 0;
  const writer = new ChannelWriter(
    7,
    0,
    4,
    (message) => sent.push(message),
    () => credited++,
    options,
  );
  assert.equal(writer.batchSize, 8);
  // The receiver consumes 256 records/s: each credit comes back when it got through the oldest piece still out.
  const batch = Array.from({ length: 512 }, (_, i) => i);
  const sizes = () => sent.filter((message) => message.kind === 'records').map((message) => (message.kind === 'records' ? message.records.length : 0));
  let emitted = 0;
  let consumed = 0;
  while (writer.available) {
    writer.sendBatch(batch);
    emitted++;
  }
  for (let i = 0; i < 400; i++) {
    clock.advance(((sizes()[consumed++] as number) * 1000) / 256);
    writer.addCredit(1);
    while (writer.available) {
      writer.sendBatch(batch);
      emitted++;
    }
  }
  assert.equal(writer.throughput, 256);
  assert.equal(writer.batchSize, 64, '256 records/s x 1 s over 4 credits');
  // What was sent since the size fell went in pieces of at most 64 records, each with its own credit.
  const pieces = sizes();
  assert.equal(pieces.at(-1), 64);
  assert.equal(
    pieces.reduce((a, b) => a + b, 0),
    emitted * 512,
    'no record lost or repeated',
  );
  writer.addCredit(1 - writer.credits);
  writer.sendBatch(batch);
  assert.equal(writer.credits, 1 - 8, 'a batch of 512 overdraws one credit by 7 pieces: the task takes no input until it is back above zero');
  assert.equal(writer.available, false);
  // Timestamps are cut with their records.
  sent.length = 0;
  writer.addCredit(100 - writer.credits);
  writer.sendBatch(
    batch.slice(0, 100),
    batch.slice(0, 100).map((i) => i * 10),
  );
  assert.deepEqual(
    sent.map((message) => (message.kind === 'records' ? [message.records.length, message.timestamps?.length, message.timestamps?.[0]] : [])),
    [
      [64, 64, 0],
      [36, 36, 640],
    ],
  );
  assert.ok(credited > 0);
});

test('without debloating a channel sends every batch whole (today’s behaviour)', () => {
  const sent: ChannelMessage[] = [];
  const writer = new ChannelWriter(
    1,
    0,
    4,
    (message) => sent.push(message),
    () => {},
  );
  writer.sendBatch(Array.from({ length: 5000 }, (_, i) => i));
  assert.equal(sent.length, 1);
  assert.equal(writer.credits, 3);
  assert.equal(writer.batchSize, Number.POSITIVE_INFINITY);
});

test('a source polls no more than its output channels take, nor more than half the target of its own throughput', (t) => {
  const clock = fakeClock(t);
  let recordsIn = 0;
  const edge = { batchSize: Number.POSITIVE_INFINITY };
  const sizer = new SourceBatchSizer(options, [edge as unknown as RecordWriter], () => recordsIn);
  assert.equal(sizer.next(), 8, 'the smallest batch until the first measurement');
  // A fast chain: 8 records in 0.01 ms, and so on: the largest batch within a few polls (doubling).
  const polls: number[] = [];
  let size = 8;
  for (let i = 0; i < 7; i++) {
    clock.advance(0.01);
    recordsIn += size;
    size = sizer.next();
    polls.push(size);
  }
  assert.deepEqual(polls, [16, 32, 64, 128, 256, 512, 512]);
  edge.batchSize = 40; // the channels into a slow stage shrank
  assert.equal(sizer.next(), 40);
  edge.batchSize = Number.POSITIVE_INFINITY;
  // A slow chained operator: 100 records per second through the chain (the average forgets the fast start).
  for (let i = 0; i < 400; i++) {
    clock.advance(1000);
    recordsIn += 100;
    sizer.next();
  }
  assert.equal(sizer.next(), 50, '100 records/s x 1 s over 2 batches');
  // Idle polls (nothing read) are left out of the throughput.
  clock.advance(60_000);
  assert.equal(sizer.next(), 50);
});
