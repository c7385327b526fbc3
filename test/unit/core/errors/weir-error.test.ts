import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERROR_CODES } from '../../../../src/core/errors/error-code.ts';
import { formatError } from '../../../../src/core/errors/format-error.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

test('error codes are one list without duplicates', () => {
  assert.equal(new Set(ERROR_CODES).size, ERROR_CODES.length);
  assert.ok(ERROR_CODES.includes('DATA_LOSS'));
});

test('a misspelt error code does not compile', () => {
  // @ts-expect-error 'DATA_LOS' is not an ErrorCode: `npm run typecheck` fails the day this line compiles
  const misspelt = new WeirError('DATA_LOS', 'the records are lost');
  assert.equal(misspelt.code, 'DATA_LOS');
});

test('a WeirError crosses a worker boundary as plain data and comes back whole', () => {
  const error = new WeirError('DATA_LOSS', 'transaction "t-0-1" was aborted before its commit', { hint: 'raise transactionTimeout', fault: 'external' });
  const copy = WeirError.fromSerialized(structuredClone(error.serialize()));
  assert.ok(copy instanceof WeirError);
  assert.deepEqual(
    { code: copy.code, message: copy.message, hint: copy.hint, fault: copy.fault, retriable: copy.retriable, stack: copy.stack },
    { code: 'DATA_LOSS', message: error.message, hint: 'raise transactionTimeout', fault: 'external', retriable: false, stack: error.stack },
  );
  assert.equal(formatError(copy), 'weir: transaction "t-0-1" was aborted before its commit\nhint: raise transactionTimeout');
});

test('an internal error that aggregates others (a Kafka answer with error codes) prints each inner id and message', () => {
  const inner = Object.assign(new Error('The leader is not available.'), { apiId: 'LEADER_NOT_AVAILABLE' });
  const printed = formatError(new AggregateError([inner], 'Received response with error while executing API Metadata(v12)'));
  assert.match(printed, /^weir: internal error: AggregateError: Received response with error while executing API Metadata\(v12\)/);
  assert.match(printed, /\n {2}caused by: LEADER_NOT_AVAILABLE: The leader is not available\.$/);
});
