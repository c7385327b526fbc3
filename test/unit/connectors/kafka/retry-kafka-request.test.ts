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
