/**
 * The produce pipeline against a fake broker that keeps, as Kafka does, the last five batches of
 * each producer and partition: a retried batch among them is a duplicate (answered as a success),
 * an older one or one past a gap is refused OUT_OF_ORDER_SEQUENCE_NUMBER. One answer is lost on
 * the way back (issue 32, point 8): the pipeline must not let later requests push the lost one's
 * batch out of the broker's window, nor send new ones while a retry is pending.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDuplicate, ProducePipeline } from '../../../../src/connectors/kafka/produce-pipeline.ts';

const WINDOW = 5;

/** One partition's log on a fake broker: sequences appended, and the last five batches kept to recognize a retry. */
class FakePartition {
  readonly log: number[] = [];
  #recent: number[] = [];

  append(sequence: number): void {
    if (this.#recent.includes(sequence)) return; // a duplicate: the first append's answer, a success
    if (sequence !== this.log.length) throw Object.assign(new Error('out of order'), { apiId: 'OUT_OF_ORDER_SEQUENCE_NUMBER' });
    this.log.push(sequence);
    this.#recent = [...this.#recent, sequence].slice(-WINDOW);
  }
}

const tick = () => new Promise((done) => setImmediate(done));
const settle = async () => {
  for (let i = 0; i < 20; i++) await tick();
};
/** The partition the requests of the first tests carry. */
const P = ['t:0'];

test('an answer lost on the way back: later requests stay within the broker window, none goes out during the retry, and the retry is a duplicate', async () => {
  const partition = new FakePartition();
  const pipeline = new ProducePipeline();
  const REQUESTS = 20;
  const LOST = 2;
  const sent: string[] = [];
  let timeOut: (() => void) | undefined;
  const attempt = (sequence: number, retried: boolean) => async () => {
    sent.push(retried ? `retry ${sequence}` : `${sequence}`);
    await tick();
    partition.append(sequence); // the broker writes it, answered or not
    if (sequence === LOST && !retried) {
      await new Promise<void>((resolve) => {
        timeOut = resolve;
      });
      throw Object.assign(new Error('Request timed out'), { code: 'PLT_KFK_TIMEOUT' });
    }
  };
  let maxWindow = 0;
  const writing = (async () => {
    for (let sequence = 0; sequence < REQUESTS; sequence++) {
      await pipeline.reserve(P);
      pipeline.send(P, attempt(sequence, false), attempt(sequence, true));
      maxWindow = Math.max(maxWindow, pipeline.windowOf('t:0'));
    }
  })();
  await settle();
  assert.deepEqual(sent, ['0', '1', '2', '3', '4', '5', '6'], 'while request 2 has no answer, at most four go out after it');
  assert.equal(pipeline.windowOf('t:0'), WINDOW);
  assert.equal(pipeline.canSend(P), false);
  timeOut?.();
  await writing;
  await pipeline.flush();
  assert.ok(sent.indexOf('retry 2') < sent.indexOf('7'), 'request 7 goes out only after the retry of 2 completed');
  assert.ok(maxWindow <= WINDOW);
  assert.deepEqual(
    partition.log,
    Array.from({ length: REQUESTS }, (_, i) => i),
    'every batch once, in order',
  );
});

test('while a failed request waits for its retry, no new request goes out; the retries go in order', async () => {
  const partition = new FakePartition();
  const pipeline = new ProducePipeline();
  const events: string[] = [];
  let failFirst: (() => void) | undefined;
  // Request 0 is lost before the broker (never written); 1 and 2 are refused as out of order behind it.
  pipeline.send(
    P,
    () =>
      new Promise((_, reject) => {
        failFirst = () => reject(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
      }),
    async () => {
      events.push('retry 0');
      partition.append(0);
    },
  );
  for (const sequence of [1, 2]) {
    pipeline.send(
      P,
      async () => {
        events.push(`${sequence}`);
        partition.append(sequence);
      },
      async () => {
        events.push(`retry ${sequence}`);
        partition.append(sequence);
      },
    );
  }
  await settle();
  assert.equal(pipeline.muted, true, 'requests 1 and 2 were refused and wait for their retries');
  assert.equal(pipeline.isMuted('t:0'), true);
  assert.equal(pipeline.canSend(P), false);
  let reserved = false;
  const third = pipeline.reserve(P).then(() => {
    reserved = true;
  });
  await settle();
  assert.equal(reserved, false, 'no new request while retries are pending');
  failFirst?.();
  await third;
  await pipeline.flush();
  assert.deepEqual(events, ['1', '2', 'retry 0', 'retry 1', 'retry 2']);
  assert.deepEqual(partition.log, [0, 1, 2]);
  assert.equal(pipeline.muted, false);
});

test('DUPLICATE_SEQUENCE_NUMBER alone is a success; mixed with another error it is not', async () => {
  const duplicate = Object.assign(new AggregateError([Object.assign(new Error('dup'), { apiId: 'DUPLICATE_SEQUENCE_NUMBER' })], 'Produce'), {});
  assert.equal(isDuplicate(duplicate), true);
  assert.equal(isDuplicate(Object.assign(new Error('x'), { apiId: 'OUT_OF_ORDER_SEQUENCE_NUMBER' })), false);
  assert.equal(isDuplicate(new Error('no id')), false);
  const pipeline = new ProducePipeline();
  let retried = false;
  pipeline.send(
    P,
    () => Promise.reject(duplicate),
    async () => {
      retried = true;
    },
  );
  pipeline.send(
    P,
    () => Promise.reject(Object.assign(new Error('timed out'), { code: 'PLT_KFK_TIMEOUT' })),
    () => Promise.reject(duplicate),
  );
  await pipeline.flush();
  assert.equal(retried, false, 'an answer of DUPLICATE_SEQUENCE_NUMBER needs no retry');
  assert.equal(pipeline.windowOf('t:0'), 0);
  assert.equal(pipeline.inFlight, 0);
});

test('a retry refused OUT_OF_ORDER_SEQUENCE_NUMBER although every request before it completed is sent again, and then goes in', async () => {
  const partition = new FakePartition();
  const pipeline = new ProducePipeline();
  const cut = () => Promise.reject(Object.assign(new Error('Connection closed'), { code: 'PLT_KFK_NETWORK' }));
  pipeline.send(
    P,
    async () => partition.append(0),
    async () => partition.append(0),
  );
  let refused = 0;
  pipeline.send(P, cut, async () => {
    // The broker refuses the first retry (whatever state it was in), and takes the same batch when sent again.
    if (refused++ === 0)
      throw Object.assign(new Error('Produce failed'), { cause: Object.assign(new Error('out of order'), { apiId: 'OUT_OF_ORDER_SEQUENCE_NUMBER' }) });
    partition.append(1);
  });
  pipeline.send(P, cut, async () => partition.append(2));
  await pipeline.flush();
  assert.equal(refused, 2, 'refused once, sent again once');
  assert.deepEqual(partition.log, [0, 1, 2], 'every batch once, in order');
});
