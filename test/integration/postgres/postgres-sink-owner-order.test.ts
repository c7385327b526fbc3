/**
 * The exactly-once PostgreSQL sink in cluster mode, where a task's runs are ordered: each run's
 * gids name the producer it was fenced in with (task-owner.ts), so an owner tells an earlier
 * owner's prepared transactions (a zombie's) from its successor's. Against a real PostgreSQL, with
 * the runs opened as a cluster task opens them (harness/postgres-sink-runs.ts).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';
import * as runs from '../../harness/postgres-sink-runs.ts';
import { prepare, recover, type SinkRun } from '../../harness/postgres-sink-runs.ts';

let server: PostgresTestServer;
before(async () => {
  server = await startPostgres();
});
after(async () => {
  await server?.stop();
});

const PRODUCER = 4007n;

/** A run of the task fenced in with epoch `epoch` of the task's producer (or of another producer id). */
function ownerAt(table: string, epoch: number, options: { mode?: 'append' | 'upsert'; producerId?: bigint } = {}): Promise<SinkRun> {
  return runs.sinkRun(server, table, { mode: options.mode, taskOwner: { producerId: options.producerId ?? PRODUCER, epoch } });
}

async function createTable(table: string, mode: 'append' | 'upsert' = 'append'): Promise<void> {
  const key = mode === 'upsert' ? 'account text PRIMARY KEY' : 'account text NOT NULL';
  await server.query(`CREATE TABLE ${table} (seq bigint NOT NULL, ${key}, total bigint NOT NULL)`);
}

const once: [number, number][] = [
  [7, 1],
  [19, 1],
];

test("a zombie's transaction prepared after its successor's restore, blocking nothing, is rolled back by the successor at its next completed checkpoint; the zombie's own look leaves the successor's", async () => {
  const table = 'owner_order_sweep';
  await createTable(table);
  const next = await ownerAt(table, 7);
  await recover(next, []);
  // The zombie (epoch 5, fenced by the successor's InitProducerId) wakes and prepares its checkpoint
  // 2 after that restore; its Kafka commit will fail. Appends: its rows lock nothing anyone waits on.
  const zombie = await ownerAt(table, 5);
  const stale = await prepare(zombie, 2);
  // A run of another producer id of the task (its order unknown) left one too.
  const unordered = await ownerAt(table, 1, { producerId: PRODUCER + 1n });
  const unknown = await prepare(unordered, 2);
  await unordered.close();

  const mine = await prepare(next, 2);
  // The zombie completes a checkpoint of its own before it learns it is fenced: it looks too, and
  // must leave its successor's prepared transaction alone.
  await zombie.notifyCheckpointComplete();
  assert.ok((await runs.preparedGids(server)).includes(mine.gid), "the zombie's look left its successor's transaction");
  await zombie.close();

  await next.commit(mine);
  await next.notifyCheckpointComplete();
  const left = await runs.preparedGids(server);
  assert.ok(
    !left.includes(stale.gid),
    `the zombie's ${stale.gid} is rolled back, not left holding a slot of max_prepared_transactions (left: ${left.join(', ')})`,
  );
  assert.deepEqual(left, [unknown.gid], "another producer's transaction is left: which owner came first is not known");
  await server.query(`ROLLBACK PREPARED '${unknown.gid}'`);
  await next.close();
  assert.deepEqual(await runs.copies(server, table), once);
});

test("a restore that stalls before it lists what lingers, its run fenced meanwhile, never rolls back the later owner's prepared transaction", async () => {
  const table = 'owner_order_stalled_restore';
  await createTable(table);
  // Run A (epoch 5) fenced the task's earlier owners and began its restore; it stands still (SIGSTOP,
  // a long GC) before its sink recovers. The group gives the task to run B (epoch 6), which restores,
  // prepares its checkpoint 2, and its record 2 commits in Kafka.
  const stalled = await ownerAt(table, 5);
  const next = await ownerAt(table, 6);
  await recover(next, []);
  const mine = await prepare(next, 2);
  // A wakes and recovers what its restored checkpoint holds (nothing): B's transaction is not its to end.
  await recover(stalled, []);
  await stalled.close();
  await next.commit(mine); // would find it rolled back: DATA_LOSS
  await next.notifyCheckpointComplete();
  await next.close();
  assert.deepEqual(await runs.copies(server, table), once);
  assert.deepEqual(await runs.preparedGids(server), []);
});

test("upserts that wait on an earlier owner's transaction, prepared after the restore: the wait ends by rolling it back, and the task goes on", {
  timeout: 120_000,
}, async () => {
  const table = 'owner_order_locks';
  await createTable(table, 'upsert');
  const next = await ownerAt(table, 9, { mode: 'upsert' });
  await recover(next, []);
  const zombie = await ownerAt(table, 8, { mode: 'upsert' });
  const stale = await prepare(zombie, 2);
  await zombie.close();
  // The successor upserts the same keys: they wait on the zombie's row locks until its watch rolls
  // the zombie's transaction back (after 5-10 s); no failure, no restart.
  const mine = await prepare(next, 2);
  await next.commit(mine);
  await next.notifyCheckpointComplete();
  await next.close();
  const written = await server.query<{ account: string; seq: string }>(`SELECT account, seq FROM ${table} ORDER BY account`);
  assert.deepEqual(
    written.map((row) => [row.account, Number(row.seq)]),
    [
      ['a19', 19],
      ['a7', 7],
    ],
  );
  assert.ok(!(await runs.preparedGids(server)).includes(stale.gid));
  assert.deepEqual(await runs.preparedGids(server), []);
});
