/**
 * The exactly-once writer when a barrier overtakes the previous checkpoint's completion (its
 * transaction still prepared, rows held behind its locks): the barrier's transaction is begun and
 * its rows carried in the committable; they are written and it is prepared once the previous one
 * committed. A restore that finds such a transaction never prepared writes its rows again. Against
 * a fake connection that logs what is sent (the real server: test/integration/postgres/).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import { ExactlyOncePostgresWriter } from '../../../../src/connectors/postgres/exactly-once-postgres-writer.ts';
import type { PostgresCommittable } from '../../../../src/connectors/postgres/postgres-committable.ts';
import { parsePostgresSinkOptions } from '../../../../src/connectors/postgres/postgres-sink-options.ts';
import type { OperatorContext } from '../../../../src/core/operator/stream-operator.ts';

type Total = { key: string; total: number };
const options = parsePostgresSinkOptions<Total, Total>({ table: 'totals', columns: ['key', 'total'], key: ['key'], mode: 'upsert', toRow: (record) => record });
const context = { jobName: 'j', uid: 's', subtaskIndex: 0, metrics: { gauge() {} } } as unknown as OperatorContext;

/** A gid without its run's token (`-o<8 characters>`, random: postgres-gid.ts), as the log shows it. */
function plain(text: string): string {
  return text.replace(/-o[0-9a-z]{8}\b/g, '');
}

/** A fake server: logs every statement (an INSERT as its values; gids without their run's token), answers what the writer asks. */
function fakeServer(gone: Set<string> = new Set(), status = 'committed') {
  const log: string[] = [];
  let xid = 100;
  const query = async (request: string | { text: string; values?: unknown[] }): Promise<unknown> => {
    const text = plain(typeof request === 'string' ? request : request.text);
    if (text.startsWith('INSERT')) {
      log.push(`INSERT ${JSON.stringify((request as { values: unknown[] }).values)}`);
      return {};
    }
    // The commit's look-up of who holds the gid (none here: COMMIT PREPARED says what is prepared): not logged.
    if (text.startsWith('SELECT transaction::text AS xid FROM pg_prepared_xacts')) return { rows: [] };
    log.push(text);
    if (text.startsWith('SELECT pg_current_xact_id()::text AS xid; PREPARE')) return [{ rows: [{ xid: String(xid++) }] }, {}];
    if (text.startsWith('BEGIN; SELECT pg_current_xact_id()')) return [{}, { rows: [{ xid: String(xid++) }] }];
    const commit = /^COMMIT PREPARED '(.*)'$/.exec(text);
    if (commit !== null && gone.has(commit[1] as string)) throw Object.assign(new Error('not found'), { code: '42704' });
    if (text.startsWith('SELECT pg_xact_status')) return { rows: [{ status }] };
    if (text.startsWith('SELECT gid FROM pg_prepared_xacts')) return { rows: [] };
    return { rows: [] };
  };
  const connect = async () => ({ query, end: async () => {} }) as unknown as pg.Client;
  return { log, connect };
}

test('a barrier behind a still prepared transaction carries its rows; they are written and prepared once that one committed, in order', async () => {
  const server = fakeServer();
  const writer = new ExactlyOncePostgresWriter(options, server.connect);
  await writer.open(context);
  const t1 = writer.beginTransaction();
  await writer.write(t1, [{ key: 'a', total: 1 }]);
  const c1 = (await writer.preCommit(t1, 1)) as PostgresCommittable;
  assert.match(c1.gid, /^weir-j-s-0-1-o[0-9a-z]{8}$/);
  assert.equal(c1.carried, undefined);

  // Checkpoint 2's barrier before checkpoint 1's completion: its row waits behind 1's locks.
  const t2 = writer.beginTransaction();
  await writer.write(t2, [{ key: 'a', total: 2 }]);
  const c2 = (await writer.preCommit(t2, 2)) as PostgresCommittable;
  assert.deepEqual({ ...c2, gid: plain(c2.gid) }, { gid: 'weir-j-s-0-2', xid: '101', carried: [{ key: 'a', total: 2 }] });
  const t3 = writer.beginTransaction();
  await writer.write(t3, [{ key: 'a', total: 3 }]);
  assert.deepEqual(server.log, [
    'BEGIN',
    'INSERT ["a",1]',
    "SELECT pg_current_xact_id()::text AS xid; PREPARE TRANSACTION 'weir-j-s-0-1'",
    'BEGIN; SELECT pg_current_xact_id()::text AS xid',
  ]);

  // Checkpoint 1 completes: its commit, then 2's rows into 2's transaction, prepared; 3's row still waits.
  server.log.length = 0;
  await writer.commit(c1);
  await writer.notifyCheckpointComplete();
  assert.deepEqual(server.log, ["COMMIT PREPARED 'weir-j-s-0-1'", 'INSERT ["a",2]', "PREPARE TRANSACTION 'weir-j-s-0-2'"]);

  // Checkpoint 2 completes: its commit, then 3's row in a new transaction.
  server.log.length = 0;
  await writer.commit(c2);
  await writer.notifyCheckpointComplete();
  assert.deepEqual(server.log, ["COMMIT PREPARED 'weir-j-s-0-2'", 'BEGIN', 'INSERT ["a",3]']);
  await writer.close();
});

test('checkpoint 2 completing first (subsuming 1): 1 commits, then 2 is written, prepared and committed', async () => {
  const server = fakeServer();
  const writer = new ExactlyOncePostgresWriter(options, server.connect);
  await writer.open(context);
  const t1 = writer.beginTransaction();
  await writer.write(t1, [{ key: 'a', total: 1 }]);
  const c1 = (await writer.preCommit(t1, 1)) as PostgresCommittable;
  const t2 = writer.beginTransaction();
  await writer.write(t2, [{ key: 'b', total: 2 }]);
  const c2 = (await writer.preCommit(t2, 2)) as PostgresCommittable;
  server.log.length = 0;
  await writer.commit(c1);
  await writer.commit(c2);
  assert.deepEqual(server.log, ["COMMIT PREPARED 'weir-j-s-0-1'", 'INSERT ["b",2]', "PREPARE TRANSACTION 'weir-j-s-0-2'", "COMMIT PREPARED 'weir-j-s-0-2'"]);
  await writer.close();
});

test('a second barrier while the carried transaction still waits fails the task (the previous checkpoint was aborted)', async () => {
  const server = fakeServer();
  const writer = new ExactlyOncePostgresWriter(options, server.connect);
  await writer.open(context);
  const t1 = writer.beginTransaction();
  await writer.write(t1, [{ key: 'a', total: 1 }]);
  await writer.preCommit(t1, 1);
  const t2 = writer.beginTransaction();
  await writer.write(t2, [{ key: 'a', total: 2 }]);
  await writer.preCommit(t2, 2);
  const t3 = writer.beginTransaction();
  await writer.write(t3, [{ key: 'a', total: 3 }]);
  await assert.rejects(writer.preCommit(t3, 3), {
    code: 'TASK_FAILED',
    message: /checkpoint 3's barrier came while the transaction weir-j-s-0-1-o[0-9a-z]{8}, weir-j-s-0-2-o[0-9a-z]{8} is still prepared/,
  });
  await writer.close();
});

test('a restore that finds a carried transaction never prepared (rolled back with its run) writes its rows again, before the new ones', async () => {
  const server = fakeServer(new Set(['weir-j-s-0-2']), 'aborted');
  const writer = new ExactlyOncePostgresWriter(options, server.connect);
  await writer.open(context);
  const carried: PostgresCommittable = { gid: 'weir-j-s-0-2', xid: '101', carried: [{ key: 'a', total: 2 }] };
  await writer.commit(carried);
  await writer.abortLingering({ subtaskIndex: 0, parallelism: 1, restoredCheckpointId: 2, allRestoredCommittables: [carried] });
  const t = writer.beginTransaction();
  await writer.write(t, [{ key: 'b', total: 3 }]);
  await writer.preCommit(t, 3);
  assert.deepEqual(server.log.slice(-3), ['BEGIN', 'INSERT ["a",2,"b",3]', "SELECT pg_current_xact_id()::text AS xid; PREPARE TRANSACTION 'weir-j-s-0-3'"]);
  // A transaction that was prepared, found rolled back: its rows are gone (not carried): DATA_LOSS, never skipped.
  await assert.rejects(writer.commit({ gid: 'weir-j-s-0-2', xid: '101' }), { code: 'DATA_LOSS' });
  await writer.close();
});
