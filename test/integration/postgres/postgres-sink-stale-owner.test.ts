/**
 * The exactly-once PostgreSQL sink when a task has two owners at once (cluster mode: an owner
 * fenced in Kafka that has not stopped yet, a zombie, and the task's next owner), against a real
 * PostgreSQL. Both owners restored the same checkpoint, read the same input and reach the same
 * checkpoint ids; a gid names its run too (postgres-gid.ts), so they never prepare under the same
 * name. The zombie's Kafka commits fail, so none of its prepared transactions may ever become
 * visible; a recovery that commits the committables a checkpoint record holds must commit the
 * transaction the record names (its xid), never another; a recovery's late rollback must reach
 * only what it listed; and the next owner's writes must not wait for ever on a zombie's locks.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PostgresCommittable } from '../../../src/connectors/postgres/postgres-committable.ts';
import { connectPostgres } from '../../../src/connectors/postgres/postgres-connection.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';
import * as runs from '../../harness/postgres-sink-runs.ts';
import { recover, rows, type SinkRun, TASK, TASKS } from '../../harness/postgres-sink-runs.ts';

let server: PostgresTestServer;
before(async () => {
  server = await startPostgres();
});
after(async () => {
  await server?.stop();
});

/** One owner's run of the task's sink (a run of one process: a random run token). */
function owner(table: string, connect: typeof connectPostgres = connectPostgres, mode: 'append' | 'upsert' = 'append'): Promise<SinkRun> {
  return runs.sinkRun(server, table, { connect, mode });
}

async function copies(table: string): Promise<Map<number, number>> {
  return new Map(await runs.copies(server, table));
}

function preparedGids(): Promise<string[]> {
  return runs.preparedGids(server);
}

test("a zombie's transaction prepared under a gid the latest record holds (its own committed) is never committed by the next owner's recovery", async () => {
  const table = 'stale_owner_commit';
  await server.query(`CREATE TABLE ${table} (seq bigint NOT NULL, account text NOT NULL, total bigint NOT NULL)`);
  // Both owners restored checkpoint 1; the new one (fenced the old one in Kafka) recovered first.
  const next = await owner(table);
  await recover(next, []);
  const zombie = await owner(table);

  // The new owner: checkpoint 2 prepared, its record committed in Kafka, its sink committed.
  const mine = next.beginTransaction();
  await next.write(mine, rows);
  const committable = (await next.preCommit(mine, 2)) as PostgresCommittable;
  await next.commit(committable);
  await next.notifyCheckpointComplete();
  assert.deepEqual(
    [...(await copies(table))],
    [
      [7, 1],
      [19, 1],
    ],
  );

  // The zombie, a checkpoint behind (paused, slow to stop): its barrier 2 prepares the same rows
  // under the same gid, now free; its Kafka commit then fails (fenced) and it stops.
  const stale = zombie.beginTransaction();
  await zombie.write(stale, rows);
  await zombie.preCommit(stale, 2);
  await zombie.close();

  // The new owner dies before its next record; the task's next owner restores record 2, which holds
  // checkpoint 2's committable (a commit of it is a repeat).
  await next.close();
  const third = await owner(table);
  await recover(third, [committable]);
  await third.close();

  assert.deepEqual(
    [...(await copies(table))],
    [
      [7, 1],
      [19, 1],
    ],
    "every row once: the zombie's transaction is not the one the record names",
  );
  assert.deepEqual(await preparedGids(), [], "the zombie's prepared transaction is rolled back");
});

test("a zombie's transaction prepared under the name the new owner's next checkpoint takes: not committed, rolled back by the next recovery", async () => {
  const table = 'stale_owner_prepare';
  await server.query(`CREATE TABLE ${table} (seq bigint NOT NULL, account text NOT NULL, total bigint NOT NULL)`);
  const next = await owner(table);
  await recover(next, []);
  const zombie = await owner(table);

  // The zombie prepares checkpoint 2 after the new owner's recovery, and stops (fenced).
  const stale = zombie.beginTransaction();
  await zombie.write(stale, rows);
  await zombie.preCommit(stale, 2);
  await zombie.close();

  // The new owner's checkpoint 2 (the same rows): prepared, or refused while the zombie's holds its
  // name (then its task restarts from checkpoint 1, whose recovery rolls the zombie's back).
  let committables: PostgresCommittable[] = [];
  const mine = next.beginTransaction();
  await next.write(mine, rows);
  try {
    const committable = (await next.preCommit(mine, 2)) as PostgresCommittable;
    committables = [committable];
    // Its record 2 committed in Kafka, then it dies before its sink commits.
  } catch {
    await next.abort(mine);
  }
  await next.close();
  const third = await owner(table);
  await recover(third, committables);
  if (committables.length === 0) {
    // Restarted from checkpoint 1: the input since is read again and written once more.
    const again = third.beginTransaction();
    await third.write(again, rows);
    const committable = (await third.preCommit(again, 2)) as PostgresCommittable;
    await third.commit(committable);
  }
  await third.close();

  assert.deepEqual(
    [...(await copies(table))],
    [
      [7, 1],
      [19, 1],
    ],
  );
  assert.deepEqual(await preparedGids(), []);
});

test("a recovery that stalls between listing the lingering transactions and rolling them back never rolls back the next owner's, prepared for the same checkpoint meanwhile", async () => {
  const table = 'stale_owner_late_rollback';
  await server.query(`CREATE TABLE ${table} (seq bigint NOT NULL, account text NOT NULL, total bigint NOT NULL)`);
  // An earlier owner prepared checkpoint 2 and was fenced before its Kafka commit: its transaction lingers.
  const earlier = await owner(table);
  const lost = earlier.beginTransaction();
  await earlier.write(lost, rows);
  await earlier.preCommit(lost, 2);
  await earlier.close();

  // The task's owner B restores checkpoint 1: it lists that transaction as lingering, then stands
  // still (a long GC, SIGSTOP) before its ROLLBACK PREPARED goes out.
  let reached!: () => void;
  const listed = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let wake!: () => void;
  const woken = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const stalling: typeof connectPostgres = async (connectionString, applicationName, where) => {
    const client = await connectPostgres(connectionString, applicationName, where);
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
    (client as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
      if (typeof args[0] !== 'string' || !args[0].startsWith('ROLLBACK PREPARED')) return query(...args);
      reached();
      return woken.then(() => query(...args));
    };
    return client;
  };
  const stalled = await owner(table, stalling);
  const stalledRecovery = stalled.abortLingering({ subtaskIndex: TASK, parallelism: TASKS, restoredCheckpointId: 1, allRestoredCommittables: [] });
  await listed;

  // Meanwhile the task moved: its next owner fenced B, restored checkpoint 1 (rolling the lingering
  // transaction back itself), read the same input and prepared its checkpoint 2; its record 2
  // committed in Kafka.
  const next = await owner(table);
  await recover(next, []);
  const mine = next.beginTransaction();
  await next.write(mine, rows);
  const committable = (await next.preCommit(mine, 2)) as PostgresCommittable;

  // B wakes and goes on with its rollback of what it listed; then it learns it was fenced and stops.
  wake();
  await stalledRecovery.catch(() => {});
  await stalled.close();

  // The next owner's sink commits what its record holds.
  await next.commit(committable);
  await next.notifyCheckpointComplete();
  await next.close();
  assert.deepEqual(
    [...(await copies(table))],
    [
      [7, 1],
      [19, 1],
    ],
    "the record's rows, once: the stalled recovery rolled back only what it listed",
  );
  assert.deepEqual(await preparedGids(), []);
});

test("upserts that wait on a zombie's transaction, prepared after the restore: the wait is cancelled and named, and the restart's recovery rolls it back", {
  timeout: 120_000,
}, async () => {
  const table = 'stale_owner_locks';
  await server.query(`CREATE TABLE ${table} (account text PRIMARY KEY, seq bigint NOT NULL, total bigint NOT NULL)`);
  const upserting = (): Promise<SinkRun> => owner(table, connectPostgres, 'upsert');
  const next = await upserting();
  await recover(next, []);
  // The zombie, paused mid-checkpoint while the task moved, wakes after the next owner's restore and
  // prepares its checkpoint 2 (the same keys, its row locks held until someone ends it); its Kafka
  // commit then fails (fenced) and it dies without ending it.
  const zombie = await upserting();
  const stale = zombie.beginTransaction();
  await zombie.write(stale, rows);
  await zombie.preCommit(stale, 2);
  await zombie.close();

  // The next owner upserts the same keys: its statements wait on the zombie's locks. The wait is
  // named and cancelled (not waited out for ever), and the task fails.
  const mine = next.beginTransaction();
  await next.write(mine, rows);
  await assert.rejects(next.preCommit(mine, 2), (error: Error) => {
    assert.match(
      error.message,
      /wait on the locks of a prepared transaction, and prepared transaction\(s\) \S+-9-2-o[0-9a-z]+ of this sink's subtask that this run did not prepare are there/,
    );
    return true;
  });
  await next.abort(mine);
  await next.close();

  // Its restart restores checkpoint 1: the recovery rolls the zombie's transaction back, and the
  // input since is written again.
  const restarted = await upserting();
  await recover(restarted, []);
  const again = restarted.beginTransaction();
  await restarted.write(again, rows);
  await restarted.commit((await restarted.preCommit(again, 2)) as PostgresCommittable);
  await restarted.close();
  const written = await server.query<{ account: string; seq: string }>(`SELECT account, seq FROM ${table} ORDER BY account`);
  assert.deepEqual(
    written.map((row) => [row.account, Number(row.seq)]),
    [
      ['a19', 19],
      ['a7', 7],
    ],
  );
  assert.deepEqual(await preparedGids(), []);
});

test("a carried transaction still open on its run's session at the restore is neither taken as committed nor written twice: that session is ended and the rows written again, once", async () => {
  const table = 'stale_owner_open_carried';
  await server.query(`CREATE TABLE ${table} (seq bigint NOT NULL, account text NOT NULL, total bigint NOT NULL)`);
  // The earlier run prepared checkpoint 1; barrier 2 came before 1's completion, so 2's transaction
  // began and carries the rows since in its committable (prepared once 1 committed).
  const earlier = await owner(table);
  const first = earlier.beginTransaction();
  await earlier.write(first, [rows[0] as (typeof rows)[0]]);
  const one = (await earlier.preCommit(first, 1)) as PostgresCommittable;
  const second = earlier.beginTransaction();
  await earlier.write(second, [rows[1] as (typeof rows)[0]]);
  const two = (await earlier.preCommit(second, 2)) as PostgresCommittable;
  assert.equal(two.carried?.length, 1);
  // Record 2 committed; the run stands still before its sink commits (SIGSTOP, or the task moved and
  // its run is not stopped yet). The task's next run restores record 2: 2's transaction is still
  // open on the earlier run's session, neither prepared nor rolled back.
  const next = await owner(table);
  await recover(next, [one, two]);
  assert.equal(next.restoredRecordsOwed(), 1, 'the carried row is kept to be written again (its checkpoint is not recorded as committed)');
  // The earlier run wakes and goes on with its commits: its session was ended, so 2 can never be
  // prepared and committed by it as well.
  await earlier.commit(one);
  await assert.rejects(earlier.notifyCheckpointComplete());
  // Its first checkpoint writes what 2 carried.
  const mine = next.beginTransaction();
  await next.commit((await next.preCommit(mine, 3)) as PostgresCommittable);
  await next.close();
  await earlier.close();
  assert.deepEqual(
    [...(await copies(table))],
    [
      [7, 1],
      [19, 1],
    ],
    'every row once',
  );
  assert.deepEqual(await preparedGids(), []);
});
