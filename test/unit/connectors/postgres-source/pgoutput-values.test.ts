import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TYPE_OID, typedValue } from '../../../../src/connectors/postgres-source/pgoutput-values.ts';

test('column values are typed by their type OID; unknown types stay text', () => {
  assert.equal(typedValue(null, TYPE_OID.int4), null);
  assert.equal(typedValue('-42', TYPE_OID.int4), -42);
  assert.equal(typedValue('7', TYPE_OID.int2), 7);
  assert.equal(typedValue('9007199254740993', TYPE_OID.int8), '9007199254740993', 'bigint as string: exact');
  assert.equal(typedValue('12345678901234567890.000001', TYPE_OID.numeric), '12345678901234567890.000001', 'numeric as string: exact');
  assert.equal(typedValue('1.5', TYPE_OID.float8), 1.5);
  assert.ok(Number.isNaN(typedValue('NaN', TYPE_OID.float4) as number));
  assert.equal(typedValue('-Infinity', TYPE_OID.float8), Number.NEGATIVE_INFINITY);
  assert.equal(typedValue('t', TYPE_OID.bool), true);
  assert.equal(typedValue('f', TYPE_OID.bool), false);
  assert.deepEqual(typedValue('{"a": [1, 2]}', TYPE_OID.jsonb), { a: [1, 2] });
  assert.deepEqual(typedValue('"x"', TYPE_OID.json), 'x');
  assert.deepEqual(typedValue('\\x00ff', TYPE_OID.bytea), Buffer.from([0, 255]));
  assert.equal(typedValue('2026-12-05 20:56:27.123456+00', TYPE_OID.timestamptz), '2026-12-05T20:56:27.123456Z');
  assert.equal(typedValue('2026-12-05 20:56:27+05:30', TYPE_OID.timestamptz), '2026-12-05T20:56:27+05:30');
  assert.equal(typedValue('2026-12-05 20:56:27.5', TYPE_OID.timestamp), '2026-12-05T20:56:27.5');
  assert.equal(typedValue('infinity', TYPE_OID.timestamptz), 'infinity');
  assert.equal(typedValue('2026-12-05', TYPE_OID.date), '2026-12-05');
  assert.equal(typedValue('f47ac10b-58cc-4372-a567-0e02b2c3d479', 2950), 'f47ac10b-58cc-4372-a567-0e02b2c3d479');
  assert.equal(typedValue('{1,2}', 1007), '{1,2}');
});
