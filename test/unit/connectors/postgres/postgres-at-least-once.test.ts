import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type PostgresFacts, postgresFindings } from '../../../../src/connectors/postgres/postgres-preflight.ts';
import { postgresSink } from '../../../../src/connectors/postgres/postgres-sink.ts';
import { parsePostgresSinkOptions } from '../../../../src/connectors/postgres/postgres-sink-options.ts';
import { environmentConfigSchema } from '../../../../src/core/config/environment-config.ts';

type Total = { key: string; total: number };
const base = { table: 'totals', columns: ['key', 'total'] as const, toRow: (record: Total) => record, deliveryGuarantee: 'at-least-once' as const };
const upsert = parsePostgresSinkOptions<Total, Total>({ ...base, mode: 'upsert', key: ['key'] });
const append = parsePostgresSinkOptions<Total, Total>({ ...base, mode: 'append' });
const config = environmentConfigSchema.parse({ parallelism: 2, checkpointing: { interval: '1s', storage: '/tmp/x', maxConcurrent: 2 } });
// A server without prepared transactions (PostgreSQL's default), older than 13, with another job's prepared transaction under the default prefix.
const facts: PostgresFacts = {
  serverVersionNum: 120_000,
  maxPreparedTransactions: 0,
  database: 'app',
  role: 'writer',
  table: {
    columns: ['key', 'total'],
    uniqueKeys: [['key']],
    rights: [
      { column: 'key', insert: true, update: true, select: true },
      { column: 'total', insert: true, update: true, select: true },
    ],
  },
};
const findings = (options: typeof upsert) => postgresFindings('postgres sink "totals"', options, facts, { config });

test('at-least-once upserts need no prepared transactions, no PostgreSQL 13, no single concurrent checkpoint: no findings', () => {
  assert.deepEqual(findings(upsert), []);
});

test('at-least-once appends: one warning that a failure can duplicate rows, with what to pick instead', () => {
  const [finding, more] = findings(append);
  assert.equal(more, undefined);
  assert.equal(finding?.level, 'warning');
  assert.match(
    finding?.message ?? '',
    /is at-least-once in mode 'append': after a failure the rows written since the latest completed checkpoint are inserted again, so table "totals" can hold duplicates/,
  );
  assert.match(finding?.hint ?? '', /use mode 'upsert' with a key .*or deliveryGuarantee 'exactly-once'/);
});

test('the table checks still apply at-least-once', () => {
  const [finding] = postgresFindings('postgres sink "totals"', upsert, { ...facts, table: undefined }, { config });
  assert.match(finding?.message ?? '', /table "totals" does not exist in database "app"/);
});

test('an at-least-once sink claims no gid prefix, says its guarantee, and refuses a gidPrefix', () => {
  const sink = postgresSink<Total, Total>({ ...base, mode: 'upsert', key: ['key'] });
  assert.equal(sink.deliveryGuarantee, 'at-least-once');
  assert.equal(sink.exclusiveClaims, undefined);
  assert.throws(() => postgresSink<Total, Total>({ ...base, mode: 'append', gidPrefix: 'mine' }), {
    code: 'INVALID_SINK',
    message: /postgresSink gidPrefix: is for deliveryGuarantee 'exactly-once' only/,
  });
  assert.throws(() => postgresSink<Total, Total>({ ...base, mode: 'append', deliveryGuarantee: 'none' as 'at-least-once' }), {
    message: /deliveryGuarantee/,
  });
});
