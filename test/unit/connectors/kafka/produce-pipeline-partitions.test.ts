/**
 * The exactly-once sink's produce pipeline pauses only the partitions of a batch being retried, as
 * Kafka's Java producer mutes them: the other partitions' batches keep going out meanwhile, and the
 * retried partition stays within the broker's five-batch duplicate window. First through the
 * TransactionDriver over a fake two-broker cluster (partition 0 led by broker 1, partition 1 by
 * broker 2; the wire format is the real one), then on the pipeline and its accumulator alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type MessageRecord, NumericMap, Reader, type Writer } from '@platformatic/kafka';
import type { ClusterConnections } from '../../../../src/connectors/kafka/cluster-connections.ts';
import { MAX_PRODUCE_IN_FLIGHT, ProducePipeline } from '../../../../src/connectors/kafka/produce-pipeline.ts';
import { RecordAccumulator } from '../../../../src/connectors/kafka/record-accumulator.ts';
import { TransactionDriver } from '../../../../src/connectors/kafka/transaction-driver.ts';

const PRODUCE = 0;
const FIND_COORDINATOR = 10;
const INIT_PRODUCER_ID = 22;
const ADD_PARTITIONS_TO_TXN = 24;
/** Where a record batch's base sequence and record count are (magic 2). */
const BASE_SEQUENCE_AT = 53;
const RECORDS_COUNT_AT = 57;

const tick = () => new Promise((done) => setImmediate(done));
const settle = async () => {
  for (let i = 0; i < 20; i++) await tick();
};

interface ProducedBatch {
  node: number;
  partition: number;
  baseSequence: number;
  count: number;
}

/** The batches of a produce request (v11) as the fake broker reads them. */
function producedBatches(node: number, payload: Writer): ProducedBatch[] {
  const reader = Reader.from(payload.buffer);
  reader.readNullableString(); // transactional id
  reader.readInt16(); // acks
  reader.readInt32(); // timeout
  const batches: ProducedBatch[] = [];
  reader.readArray((topic) => {
    topic.readString();
    topic.readArray((entry) => {
      const partition = entry.readInt32();
      const bytes = Buffer.from(entry.readBytes() as Uint8Array);
      batches.push({ node, partition, baseSequence: bytes.readInt32BE(BASE_SEQUENCE_AT), count: bytes.readInt32BE(RECORDS_COUNT_AT) });
    });
  });
  return batches;
}

/**
 * Two fake brokers: broker 1 leads partition 0 and coordinates the transaction, broker 2 leads
 * partition 1. `onProduce` answers each produce request (throw to fail it, or wait).
 */
function fakeCluster(onProduce: (batches: ProducedBatch[]) => Promise<void>) {
  const nodes = new Map<number, unknown>();
  for (const node of [1, 2]) {
    nodes.set(node, {
      send(apiKey: number, _version: number, payload: () => Writer, ...rest: unknown[]) {
        const callback = rest[rest.length - 1] as (error: unknown, response?: unknown) => void;
        const answer = (response: Promise<unknown>) =>
          void response.then(
            (value) => callback(null, value),
            (error: unknown) => callback(error),
          );
        if (apiKey === FIND_COORDINATOR) answer(Promise.resolve({ coordinators: [{ nodeId: 1, errorCode: 0 }] }));
        else if (apiKey === INIT_PRODUCER_ID) answer(Promise.resolve({ producerId: 7n, producerEpoch: 0 }));
        else if (apiKey === ADD_PARTITIONS_TO_TXN) answer(Promise.resolve({}));
        else if (apiKey === PRODUCE) answer(onProduce(producedBatches(node, payload())).then(() => ({ responses: [] })));
        else callback(new Error(`the fake broker does not answer API ${apiKey}`));
      },
    });
  }
  const connections = {
    bootstrap: [],
    outage: { recovered: () => {}, failed: () => {} },
    any: async () => nodes.get(1),
    node: async (id: number) => nodes.get(id),
    topic: async (name: string) => ({
      name,
      partitions: [
        { partition: 0, leaderId: 1 },
        { partition: 1, leaderId: 2 },
      ],
    }),
  };
  return connections as unknown as ClusterConnections;
}

/** 100 records of about 1 KB for each of partitions 0 and 1: some 100 KB a partition. */
const chunk = (from: number): MessageRecord[] =>
  Array.from({ length: 200 }, (_, i) => ({ topic: 't', partition: i % 2, key: Buffer.from(String(from + i)), value: Buffer.alloc(1000, i) }));

test("while partition 0's batch is retried, partition 1's batches keep going out; partition 0's wait, in order", async () => {
  const received: Array<ProducedBatch & { retry: boolean }> = [];
  let releaseRetry: (() => void) | undefined;
  let failed = false;
  const connections = fakeCluster(async (batches) => {
    await tick();
    const first = batches.find((batch) => batch.partition === 0 && batch.baseSequence === 0);
    const retry = first !== undefined && failed;
    for (const batch of batches) received.push({ ...batch, retry });
    if (first !== undefined && !failed) {
      failed = true;
      throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }); // partition 0's first batch: retried
    }
    if (retry) await new Promise<void>((resolve) => (releaseRetry = resolve)); // the retry is in flight until released
  });
  const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000, retryTimeoutMs: 10_000 });
  const transaction = await driver.initTransaction('job-0-0');
  // Two chunks: 400 KB held, past COALESCE_BYTES: a request to each leader.
  await driver.sendPipelined(transaction, chunk(0));
  await driver.sendPipelined(transaction, chunk(200));
  await settle();
  assert.ok(releaseRetry !== undefined, "partition 0's first batch failed and its retry is in flight");
  const before = received.length;
  const writing = (async () => {
    for (let i = 2; i < 8; i++) await driver.sendPipelined(transaction, chunk(i * 200));
  })();
  try {
    await settle();
    const during = received.slice(before);
    assert.ok(
      during.filter((batch) => batch.partition === 1).length >= 2,
      `partition 1's batches go out while partition 0's is retried (sent meanwhile: ${JSON.stringify(during)})`,
    );
    assert.deepEqual(
      during.filter((batch) => batch.partition === 0),
      [],
      'no batch of partition 0 goes out while its first one is retried',
    );
  } finally {
    releaseRetry?.();
  }
  await writing;
  await driver.flush(transaction);
  // Each partition's batches reached the broker in sequence order, every record once (partition 0's first batch twice: the retry).
  for (const partition of [0, 1]) {
    const batches = received.filter((batch) => batch.partition === partition && !(batch.retry && partition === 0));
    let next = 0;
    for (const batch of batches) {
      assert.equal(batch.baseSequence, next, `partition ${partition}: batches in sequence order`);
      next += batch.count;
    }
    assert.equal(next, 800, `partition ${partition}: all 800 records`);
  }
});

test('the pipeline: a partition being retried is muted and passed over; other partitions may send; its window stays within the limit', async () => {
  const pipeline = new ProducePipeline();
  let releaseRetry: (() => void) | undefined;
  pipeline.send(
    ['t:0', 't:1'],
    () => Promise.reject(Object.assign(new Error('timed out'), { code: 'PLT_KFK_TIMEOUT' })),
    () => new Promise<void>((resolve) => (releaseRetry = () => resolve())),
  );
  pipeline.send(
    ['t:1'],
    async () => {},
    async () => {},
  );
  await settle();
  assert.equal(pipeline.isMuted('t:0'), true);
  assert.equal(pipeline.isMuted('t:1'), true, 'a partition of the retried request is muted too');
  assert.equal(pipeline.isMuted('t:2'), false);
  assert.equal(pipeline.canSend(['t:0']), false);
  assert.equal(pipeline.canSend(['t:2']), true, 'another partition may send while the request is retried');
  pipeline.hold([
    { topic: 't', partition: 0, value: Buffer.from('a') },
    { topic: 't', partition: 2, value: Buffer.from('b') },
    { topic: 't', partition: 0, value: Buffer.from('c') },
  ]);
  const taken = pipeline.takeHeld(1_000_000, {});
  assert.deepEqual(
    taken.map((batch) => batch.partition),
    [2],
    "partition 0's batch stays held",
  );
  for (let i = 0; i < MAX_PRODUCE_IN_FLIGHT - 1; i++) {
    await pipeline.reserve(['t:2']);
    pipeline.send(
      ['t:2'],
      () => new Promise(() => {}),
      async () => {},
    );
  }
  assert.equal(pipeline.inFlight, MAX_PRODUCE_IN_FLIGHT);
  assert.equal(pipeline.canSend(['t:3']), false, 'at most MAX_PRODUCE_IN_FLIGHT requests in flight in all');
  releaseRetry?.();
  await settle();
  assert.equal(pipeline.isMuted('t:0'), false);
  assert.equal(pipeline.windowOf('t:0'), 0);
  assert.deepEqual(
    pipeline.takeHeld(1_000_000, {}).map((batch) => batch.partition),
    [0],
  );
});

test('the accumulator passes over the partitions not ready, keeping their batches in order for a later take', () => {
  const accumulator = new RecordAccumulator(200); // about one 100-byte record a batch
  const record = (partition: number, fill: number) => ({ topic: 'out', partition, value: Buffer.alloc(100, fill) });
  accumulator.append([record(0, 0), record(1, 1), record(0, 2), record(1, 3)]);
  const sequences = new NumericMap();
  const producer = { transactionalId: 'tx', producerId: 3n, producerEpoch: 1 };
  const ready = new Set(['out:1']);
  const first = accumulator.take(10_000, producer, sequences, (partition) => ready.has(partition));
  assert.deepEqual(
    first.map((batch) => [batch.partition, batch.bytes.readInt32BE(BASE_SEQUENCE_AT)]),
    [[1, 0]],
  );
  assert.equal(
    accumulator.hasReady((partition) => ready.has(partition)),
    true,
  );
  ready.add('out:0');
  // The batches passed over come first now; a partition's second batch still waits for the next take.
  const second = accumulator.take(10_000, producer, sequences, (partition) => ready.has(partition));
  assert.deepEqual(
    second.map((batch) => [batch.partition, batch.bytes.readInt32BE(BASE_SEQUENCE_AT)]),
    [[0, 0]],
  );
  const third = accumulator.take(10_000, producer, sequences, (partition) => ready.has(partition));
  assert.deepEqual(
    third.map((batch) => [batch.partition, batch.bytes.readInt32BE(BASE_SEQUENCE_AT)]),
    [
      [0, 1],
      [1, 1],
    ],
  );
  assert.equal(accumulator.bytes, 0);
});
