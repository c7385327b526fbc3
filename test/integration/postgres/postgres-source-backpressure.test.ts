/**
 * postgresSource's back pressure against a real PostgreSQL: while nothing is polled (the task's
 * output is full), the reader decodes at most maxBufferedChanges changes and pauses the replication
 * stream; polled again, it resumes and every change arrives, in order.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PostgresChangeRecord } from '../../../src/connectors/postgres-source/postgres-change-record.ts';
import { postgresSource } from '../../../src/connectors/postgres-source/postgres-source.ts';
import type { PostgresSourceReader } from '../../../src/connectors/postgres-source/postgres-source-reader.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';

let server: PostgresTestServer;
before(async () => {
  server = await startPostgres();
  await server.query('CREATE TABLE events (id int PRIMARY KEY, payload text NOT NULL)');
  await server.query('CREATE PUBLICATION events_pub FOR TABLE events');
});
after(async () => {
  await server?.stop();
});

test('nothing polled: at most maxBufferedChanges decoded, the stream paused; polled again, all 5000 changes in order', async () => {
  const source = postgresSource({
    connectionString: server.connectionString,
    slot: 'bp_slot',
    publication: 'events_pub',
    snapshot: 'never',
    maxBufferedChanges: 200,
  });
  const reader = source.createReader({ subtaskIndex: 0, parallelism: 1, attemptNumber: 0, uid: 'events' }) as PostgresSourceReader;
  reader.open(await source.createInitialSplits(1));
  try {
    const out: PostgresChangeRecord[] = [];
    // The slot is made, then the stream starts: drain the start.
    for (let i = 0; i < 50 && (await server.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'bp_slot' AND active")).length === 0; i++) {
      out.push(...reader.pollNext(100));
      await sleep(100);
    }
    out.push(...reader.pollNext(100));
    await server.query("INSERT INTO events SELECT i, repeat('x', 100) FROM generate_series(1, 5000) AS i");
    await sleep(1500);
    const held = reader.buffered;
    assert.ok(held >= 150 && held <= 201, `buffered ${held} changes while nothing was polled (maxBufferedChanges 200)`);
    const deadline = Date.now() + 20_000;
    while (out.length < 5000 && Date.now() < deadline) {
      const batch = reader.pollNext(300);
      out.push(...batch);
      assert.ok(reader.buffered <= 201, `buffered ${reader.buffered}`);
      if (batch.length === 0) await sleep(20);
    }
    assert.equal(out.length, 5000);
    assert.deepEqual(
      out.map((change) => change.after?.id),
      Array.from({ length: 5000 }, (_, i) => i + 1),
    );
    assert.ok(out.every((change) => change.op === 'insert' && change.table === 'events'));
  } finally {
    await reader.close();
  }
});
