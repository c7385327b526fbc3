import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type PostgresFacts, postgresFindings } from '../../../../src/connectors/postgres/postgres-preflight.ts';
import { postgresSink } from '../../../../src/connectors/postgres/postgres-sink.ts';
import { parsePostgresSinkOptions } from '../../../../src/connectors/postgres/postgres-sink-options.ts';
import { environmentConfigSchema } from '../../../../src/core/config/environment-config.ts';

const options = parsePostgresSinkOptions<{ key: string; sum: number }, { key: string; total: number }>({
  table: 'totals',
  columns: ['key', 'total'],
  key: ['key'],
  mode: 'upsert',
  toRow: (record) => ({ key: record.key, total: record.sum }),
});
const config = environmentConfigSchema.parse({ parallelism: 2, checkpointing: { interval: '1s', storage: '/tmp/x', maxConcurrent: 1 } });
const healthy: PostgresFacts = {
  serverVersionNum: 150_000,
  maxPreparedTransactions: 20,
  database: 'app',
  role: 'writer',
  table: {
    columns: ['key', 'total', 'updated'],
    uniqueKeys: [['key']],
    rights: [
      { column: 'key', insert: true, update: true, select: true },
      { column: 'total', insert: true, update: true, select: true },
    ],
  },
};
const findings = (facts: PostgresFacts, parsed = options) => postgresFindings('postgres sink "totals"', parsed, facts, { config });

test('a healthy server, table, key and role: no findings', () => {
  assert.deepEqual(findings(healthy), []);
});

test('max_prepared_transactions = 0 is refused, naming the setting and the fix', () => {
  const [finding] = findings({ ...healthy, maxPreparedTransactions: 0 });
  assert.equal(finding?.level, 'error');
  assert.match(finding?.message ?? '', /max_prepared_transactions is 0 \(PostgreSQL's default\), so it refuses PREPARE TRANSACTION/);
  assert.match(finding?.hint ?? '', /set max_prepared_transactions to at least 4 .*ALTER SYSTEM SET max_prepared_transactions = 10 .*restart PostgreSQL/);
});

test('too few prepared transactions for this sink alone: a warning with the number', () => {
  const [finding] = findings({ ...healthy, maxPreparedTransactions: 3 });
  assert.equal(finding?.level, 'warning');
  assert.match(finding?.message ?? '', /max_prepared_transactions is 3; this sink alone can hold 4 prepared transactions/);
});

test('a missing table is named, with the database and the search_path', () => {
  const [finding] = findings({ ...healthy, table: undefined });
  assert.match(finding?.message ?? '', /table "totals" does not exist in database "app" \(on role "writer"'s search_path\)/);
  assert.match(finding?.hint ?? '', /Weir does not create tables/);
});

test('a missing column and a missing key are named', () => {
  const facts: PostgresFacts = {
    ...healthy,
    table: { ...(healthy.table as NonNullable<PostgresFacts['table']>), columns: ['key', 'amount'], uniqueKeys: [['key', 'amount']] },
  };
  const messages = findings(facts).map((finding) => `${finding.message} | ${finding.hint}`);
  assert.equal(messages.length, 2, messages.join('\n'));
  assert.match(messages[0] ?? '', /table "totals" has no column "total" \(it has "key", "amount"\)/);
  assert.match(
    messages[1] ?? '',
    /no primary key or unique index on exactly \("key"\), which ON CONFLICT \("key"\) needs \| add one: ALTER TABLE "totals" ADD PRIMARY KEY \("key"\)/,
  );
});

test('missing rights are named: INSERT, and for an upsert UPDATE of the values and SELECT of the key', () => {
  const facts: PostgresFacts = {
    ...healthy,
    table: {
      ...(healthy.table as NonNullable<PostgresFacts['table']>),
      rights: [
        { column: 'key', insert: false, update: false, select: false },
        { column: 'total', insert: false, update: false, select: true },
      ],
    },
  };
  const [finding] = findings(facts);
  assert.match(finding?.message ?? '', /role "writer" lacks INSERT on "key", "total" and SELECT on "key" and UPDATE on "total" of table "totals"/);
  assert.match(finding?.hint ?? '', /GRANT INSERT, SELECT, UPDATE ON "totals" TO "writer"/);
});

test('bad options fail when the sink is made, naming the option and the fix', () => {
  const base = { table: 'totals', columns: ['key', 'total'], toRow: (record: unknown) => record as Record<string, unknown> };
  assert.throws(() => postgresSink({ ...base, mode: 'upsert' }), { code: 'INVALID_SINK', message: /postgresSink key: is required in mode 'upsert'/ });
  assert.throws(() => postgresSink({ ...base, mode: 'upsert', key: ['id'] }), {
    message: /postgresSink key: names "id", which is not one of the columns written/,
  });
  assert.throws(() => postgresSink({ ...base, mode: 'append', gidPrefix: "it's" }), { message: /gidPrefix "it's" has characters other than/ });
  assert.throws(() => postgresSink({ ...base, mode: 'append', table: 'a.b.c' }), { message: /table "a.b.c" must be "name" or "schema.name"/ });
  assert.throws(() => postgresSink({ ...base, mode: 'merge' as 'append' }), { message: /postgresSink mode: must be 'append' or 'upsert'/ });
});

test('the sink claims its gid prefix: two sinks of a job with the same prefix are refused by the preflight', () => {
  const sink = postgresSink({ table: 't', columns: ['a'], mode: 'append', toRow: (record: { a: number }) => record });
  assert.deepEqual(sink.exclusiveClaims?.({ jobName: 'orders', uid: 'to-pg' }), [
    { what: 'prepared transaction gid prefix', name: 'weir-orders-to-pg', setting: 'gidPrefix' },
  ]);
  assert.equal(sink.deliveryGuarantee, 'exactly-once');
});

test('more than one concurrent checkpoint is refused: the next one would wait on the prepared locks', () => {
  const concurrent = environmentConfigSchema.parse({ checkpointing: { interval: '1s', storage: '/tmp/x', maxConcurrent: 2 } });
  const [finding] = postgresFindings('postgres sink "totals"', options, healthy, { config: concurrent });
  assert.equal(finding?.level, 'error');
  assert.match(finding?.message ?? '', /checkpointing.maxConcurrent is 2: a prepared transaction keeps its row locks/);
  assert.match(finding?.hint ?? '', /set checkpointing.maxConcurrent to 1/);
});
