/** The test PostgreSQL itself (test/harness/postgres-server.ts): it starts, takes prepared transactions, and a server without them refuses PREPARE. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startPostgres } from '../../harness/postgres-server.ts';

test('the test PostgreSQL starts on a free port with max_prepared_transactions set, and two-phase commit works', async () => {
  const server = await startPostgres({ maxPreparedTransactions: 5 });
  try {
    const [settings] = await server.query<{ max: string; version: string }>(
      "SELECT current_setting('max_prepared_transactions') AS max, current_setting('server_version_num') AS version",
    );
    assert.equal(settings?.max, '5');
    assert.ok(Number(settings?.version) >= 150000, `server_version_num ${settings?.version}`);
    await server.query('CREATE TABLE t (id int PRIMARY KEY)');
    await server.query("BEGIN; INSERT INTO t VALUES (1); PREPARE TRANSACTION 'harness-1'");
    assert.deepEqual(await server.query('SELECT id FROM t'), []);
    await server.query("COMMIT PREPARED 'harness-1'");
    assert.deepEqual(await server.query('SELECT id FROM t'), [{ id: 1 }]);
    assert.deepEqual(await server.query('SELECT gid FROM pg_prepared_xacts'), []);
  } finally {
    await server.stop();
  }
});

test('a test PostgreSQL with max_prepared_transactions = 0 refuses PREPARE TRANSACTION', async () => {
  const server = await startPostgres({ maxPreparedTransactions: 0 });
  try {
    await assert.rejects(server.query("BEGIN; SELECT 1; PREPARE TRANSACTION 'harness-2'"), /prepared transactions are disabled/);
  } finally {
    await server.stop();
  }
});

test('the test PostgreSQL killed with SIGKILL starts again with what was committed and prepared', async () => {
  const server = await startPostgres({ maxPreparedTransactions: 5 });
  try {
    await server.query('CREATE TABLE t (id int PRIMARY KEY)');
    await server.query('INSERT INTO t VALUES (1)');
    await server.query("BEGIN; INSERT INTO t VALUES (2); PREPARE TRANSACTION 'harness-3'");
    await server.kill();
    await assert.rejects(server.query('SELECT 1'));
    await server.start();
    assert.deepEqual(await server.query('SELECT gid FROM pg_prepared_xacts'), [{ gid: 'harness-3' }]);
    await server.query("COMMIT PREPARED 'harness-3'");
    assert.deepEqual(await server.query('SELECT id FROM t ORDER BY id'), [{ id: 1 }, { id: 2 }]);
  } finally {
    await server.stop();
  }
});
