import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isNetworkError, retryKafkaRequest } from '../../../../src/connectors/kafka/retry-kafka-request.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

test('a request is retried on retriable Kafka errors and network errors, forgetting routes before each retry', async () => {
  let calls = 0;
  let forgotten = 0;
  const answer = await retryKafkaRequest(
    'Produce',
    async () => {
      calls++;
      if (calls === 1) throw Object.assign(new Error('moved'), { apiId: 'NOT_LEADER_OR_FOLLOWER' });
      if (calls === 2) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
      return 'done';
    },
    10_000,
    () => forgotten++,
  );
  assert.equal(answer, 'done');
  assert.equal(calls, 3);
  assert.equal(forgotten, 2);
  assert.equal(isNetworkError(Object.assign(new Error(), { code: 'EPIPE' })), true);
  assert.equal(isNetworkError(new Error('other')), false);
});

test('a request failing with a non-retriable error fails at once as KAFKA_REQUEST_FAILED naming the request and the error ids', async () => {
  let calls = 0;
  await assert.rejects(
    retryKafkaRequest(
      'EndTxn(commit) for "t-0-0"',
      async () => {
        calls++;
        throw Object.assign(new Error('fenced'), { apiId: 'PRODUCER_FENCED' });
      },
      10_000,
      () => {},
    ),
    (error: unknown) => {
      assert.ok(error instanceof WeirError);
      assert.equal(error.code, 'KAFKA_REQUEST_FAILED');
      assert.equal(error.message, 'EndTxn(commit) for "t-0-0" failed with PRODUCER_FENCED: fenced');
      assert.equal((error as WeirError & { apiId?: string }).apiId, 'PRODUCER_FENCED');
      assert.equal(error.retriable, false);
      return true;
    },
  );
  assert.equal(calls, 1);
  const own = new WeirError('UNKNOWN_TOPIC', 'topic "x" does not exist', { hint: 'create it' });
  await assert.rejects(
    retryKafkaRequest(
      'Produce',
      async () => {
        throw own;
      },
      10_000,
      () => {},
    ),
    (error: unknown) => error === own,
  );
});

test("a broker's error message for a partition is in the failure, with the partition's path", async () => {
  const protocolError = Object.assign(new Error('The broker received an out of order sequence number.'), {
    apiId: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
    path: '/responses/0/partition_responses/1',
    serverErrorMessage: 'Out of order sequence number for producer 7 at offset 12 in partition t-1: 5 (incoming seq. number), 3 (current end sequence number)',
  });
  await assert.rejects(
    retryKafkaRequest(
      'Produce for "t-0"',
      async () => Promise.reject(new AggregateError([protocolError], 'Received response with error')),
      10_000,
      () => {},
    ),
    (error: unknown) => {
      assert.ok(error instanceof WeirError);
      assert.match(error.message, /^Produce for "t-0" failed with OUT_OF_ORDER_SEQUENCE_NUMBER: Received response with error/);
      assert.match(
        error.message,
        /\(the broker: \/responses\/0\/partition_responses\/1: Out of order sequence number for producer 7 .* 3 \(current end sequence number\)\)$/,
      );
      return true;
    },
  );
});
