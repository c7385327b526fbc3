/**
 * DescribeTransactions over a fake broker connection that answers with the real wire format, parsed
 * by the client's own parser: an id the coordinator does not know (TRANSACTIONAL_ID_NOT_FOUND,
 * e.g. expired after transactional.id.expiration.ms) has nothing open and is left out; a known id
 * is described; any other error still fails.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Reader, Writer } from '@platformatic/kafka';
import type { ClusterConnections } from '../../../../src/connectors/kafka/cluster-connections.ts';
import { TransactionDriver } from '../../../../src/connectors/kafka/transaction-driver.ts';

const FIND_COORDINATOR = 10;
const DESCRIBE_TRANSACTIONS = 65;
const TRANSACTIONAL_ID_NOT_FOUND = 105;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53;

interface State {
  errorCode: number;
  state: string;
  producerId: bigint;
  producerEpoch: number;
  partitions: number[];
}

/** A DescribeTransactions v0 response body, as a broker sends it. */
function describeResponse(states: Array<[string, State]>): Buffer {
  const writer = Writer.create().appendInt32(0);
  writer.appendArray(states, (w, [id, state]) => {
    w.appendInt16(state.errorCode)
      .appendString(id)
      .appendString(state.state)
      .appendInt32(60_000)
      .appendInt64(state.state === 'Ongoing' ? 1_000n : -1n)
      .appendInt64(state.producerId)
      .appendInt16(state.producerEpoch)
      .appendArray(state.partitions.length === 0 ? [] : [['t', state.partitions] as const], (t, [topic, partitions]) => {
        t.appendString(topic).appendArray(partitions, (p, partition) => p.appendInt32(partition), true, false);
      });
  });
  writer.appendTaggedFields();
  return writer.buffer;
}

/** Connections to one fake broker that coordinates every id and knows only `known`. */
function fakeBroker(known: Map<string, State>, requests: string[]) {
  const connection = {
    send(
      apiKey: number,
      _version: number,
      payload: () => Writer,
      parse: (correlationId: number, apiKey: number, version: number, reader: Reader) => unknown,
      _requestTags: boolean,
      _responseTags: boolean,
      callback: (error: unknown, response?: unknown) => void,
    ) {
      if (apiKey === FIND_COORDINATOR) {
        callback(null, { coordinators: [{ key: '', nodeId: 1, host: '127.0.0.1', port: 9092, errorCode: 0, errorMessage: null }] });
        return;
      }
      assert.equal(apiKey, DESCRIBE_TRANSACTIONS);
      const ids = Reader.from(payload().buffer).readArray((r) => r.readString(), true, false) as string[];
      requests.push(...ids);
      const states = ids.map((id): [string, State] => [
        id,
        known.get(id) ?? { errorCode: TRANSACTIONAL_ID_NOT_FOUND, state: '', producerId: -1n, producerEpoch: -1, partitions: [] },
      ]);
      try {
        callback(null, parse(1, apiKey, 0, Reader.from(describeResponse(states))));
      } catch (error) {
        callback(error);
      }
    },
  };
  const outage = { recovered: () => {}, failed: () => {} };
  return { any: async () => connection, node: async () => connection, bootstrap: [], outage } as unknown as ClusterConnections;
}

test('an id the broker does not know (never used, or expired) has nothing open: left out, not thrown', async () => {
  const requests: string[] = [];
  const known = new Map<string, State>([['job-0-0', { errorCode: 0, state: 'Ongoing', producerId: 7n, producerEpoch: 3, partitions: [0, 1] }]]);
  const driver = new TransactionDriver(fakeBroker(known, requests), { transactionTimeoutMs: 60_000, retryTimeoutMs: 1_000 });
  const descriptions = await driver.describeTransactions(['job-0-0', 'job-0-1', 'expired-0-0']);
  assert.deepEqual(requests, ['job-0-0', 'job-0-1', 'expired-0-0']);
  assert.deepEqual(descriptions, [
    { transactionalId: 'job-0-0', state: 'Ongoing', producerId: 7n, producerEpoch: 3, startTimeMs: 1000, timeoutMs: 60_000, partitions: 2 },
  ]);
  assert.deepEqual(await driver.describeTransactions(['expired-0-0']), []);
});

test('another error in the answer still fails', async () => {
  const known = new Map<string, State>([
    ['secret-0-0', { errorCode: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, state: '', producerId: -1n, producerEpoch: -1, partitions: [] }],
  ]);
  const driver = new TransactionDriver(fakeBroker(known, []), { transactionTimeoutMs: 60_000, retryTimeoutMs: 1_000 });
  await assert.rejects(driver.describeTransactions(['secret-0-0']), /TRANSACTIONAL_ID_AUTHORIZATION_FAILED/);
});
