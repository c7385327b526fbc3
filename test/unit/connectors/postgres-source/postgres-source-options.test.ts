import assert from 'node:assert/strict';
import { test } from 'node:test';
import { postgresSource } from '../../../../src/connectors/postgres-source/postgres-source.ts';
import { parsePostgresSourceOptions } from '../../../../src/connectors/postgres-source/postgres-source-options.ts';
import { postgresSourceFindings } from '../../../../src/connectors/postgres-source/postgres-source-preflight.ts';
import { environmentConfigSchema } from '../../../../src/core/config/environment-config.ts';
import { WeirError } from '../../../../src/core/errors/weir-error.ts';

test('bad options are refused when the job is built, naming the setting', () => {
  assert.throws(() => postgresSource({ slot: 'Bad-Slot', publication: 'p' }), /postgresSource slot: "Bad-Slot" is not a replication slot name/);
  assert.throws(() => postgresSource({ slot: 's', publication: '' }), /postgresSource publication/);
  assert.throws(
    () => postgresSource({ slot: 's', publication: 'p', snapshot: 'always' as never }),
    /postgresSource snapshot: "always" is not 'initial' or 'never'/,
  );
  assert.throws(() => postgresSource({ slot: 's', publication: 'p', tables: ['a.b.c'] }), /postgresSource tables: "a.b.c" is not "name" or "schema.name"/);
  assert.throws(() => postgresSource({ slot: 's', publication: 'p', maxBufferedChanges: 0 }), /postgresSource maxBufferedChanges: 0 is not a positive integer/);
  assert.throws(() => postgresSource({ slot: 's', publication: 'p', slots: 's' } as never), /postgresSource slots: is not an option/);
  assert.deepEqual(parsePostgresSourceOptions({ slot: 's', publication: 'p', tables: ['orders', 'sales.items'] }).tables, [
    { schema: 'public', table: 'orders' },
    { schema: 'sales', table: 'items' },
  ]);
});

test('a source parallelism above 1 is refused: one slot is one stream', () => {
  const source = postgresSource({ slot: 'orders', publication: 'p' });
  assert.throws(
    () => source.createReader({ subtaskIndex: 0, parallelism: 2, attemptNumber: 0, uid: 'cdc' }),
    (error: unknown) =>
      error instanceof WeirError &&
      /postgres source "cdc" runs at parallelism 2, but replication slot "orders" is one stream read by one subtask/.test(error.message) &&
      /parallelism: 1/.test(error.hint ?? ''),
  );
});

test('preflight findings from the facts: every problem named with its fix', () => {
  const options = parsePostgresSourceOptions({ slot: 'orders', publication: 'pub' });
  const facts = {
    serverVersionNum: 150_000,
    walLevel: 'replica',
    maxReplicationSlots: 1,
    slotsInUse: 0,
    slot: undefined,
    database: 'app',
    role: 'etl',
    replicationRole: false,
    publicationExists: false,
    publishedTables: [],
  };
  const messages = postgresSourceFindings(options, facts, 'postgres source "cdc"').map((finding) => finding.message);
  assert.deepEqual(messages, [
    'postgres source "cdc": wal_level is \'replica\': logical replication needs wal_level = logical',
    'postgres source "cdc": role "etl" lacks the REPLICATION attribute, which a replication slot and its stream need',
    'postgres source "cdc": publication "pub" does not exist in database "app"',
    'postgres source "cdc": max_replication_slots (1) is exhausted: 0 slots exist and the source needs 2 more',
  ]);
  const ok = { ...facts, walLevel: 'logical', replicationRole: true, publicationExists: true, publishedTables: ['public.orders'], maxReplicationSlots: 10 };
  assert.deepEqual(postgresSourceFindings(options, ok, 'w'), []);
  const foreign = postgresSourceFindings(options, { ...ok, slot: { plugin: 'test_decoding', database: 'app', active: false } }, 'w');
  assert.match(foreign[0]?.message ?? '', /replication slot "orders" exists but is not a pgoutput slot/);
  const busy = postgresSourceFindings(options, { ...ok, slot: { plugin: 'pgoutput', database: 'app', active: true } }, 'w');
  assert.match(busy[0]?.message ?? '', /is being read by another session now/);
});

test('a job without checkpointing is refused by the preflight: the slot would never move on', async () => {
  const findings = await postgresSource({ slot: 'orders', publication: 'p' }).preflight?.({
    jobName: 'cdc',
    uid: 'cdc',
    config: environmentConfigSchema.parse({ parallelism: 1 }),
    exactlyOnce: false,
  });
  assert.equal(findings?.length, 1);
  assert.match(
    findings?.[0]?.message ?? '',
    /postgres source "cdc" needs checkpointing: its position is confirmed to the server only when a checkpoint completes/,
  );
});
