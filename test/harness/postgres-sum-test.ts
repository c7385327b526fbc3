/** The scaffolding of a test of the PostgreSQL keyed-sum job: a real PostgreSQL for the file's tests, fresh tables and a folder per test, the gids left prepared. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { POSTGRES_KEYED_SUM_TABLES } from '../fixtures/jobs/postgres-keyed-sum-job.ts';
import { type PostgresTestServer, startPostgres } from './postgres-server.ts';

export interface PostgresSumTest {
  /** The server (started before the file's tests, stopped after them). */
  readonly server: PostgresTestServer;
  /** Empty tables (anything an earlier test left prepared rolled back first: it would hold their locks) and a new folder for the test. */
  freshTables(): Promise<string>;
  /** The gids prepared now, in order. */
  prepared(): Promise<string[]>;
}

/** Registers the file's before/after hooks: one server with `maxPreparedTransactions`, folders under `weir-pg-<label>-`. */
export function postgresSumTest(label: string, maxPreparedTransactions = 20): PostgresSumTest {
  let server: PostgresTestServer | undefined;
  const folders: string[] = [];
  before(async () => {
    server = await startPostgres({ maxPreparedTransactions });
  });
  after(async () => {
    await server?.stop();
    for (const folder of folders) await rm(folder, { recursive: true, force: true });
  });
  const running = (): PostgresTestServer => {
    if (server === undefined) throw new Error('the PostgreSQL of this test file has not started');
    return server;
  };
  const prepared = async () => (await running().query<{ gid: string }>('SELECT gid FROM pg_prepared_xacts ORDER BY gid')).map((row) => row.gid);
  return {
    get server() {
      return running();
    },
    prepared,
    async freshTables() {
      const db = running();
      for (const gid of await prepared()) await db.query(`ROLLBACK PREPARED '${gid}'`);
      await db.query('DROP TABLE IF EXISTS sum_events, sum_totals');
      for (const statement of POSTGRES_KEYED_SUM_TABLES) await db.query(statement);
      const folder = await mkdtemp(join(tmpdir(), `weir-pg-${label}-`));
      folders.push(folder);
      return folder;
    },
  };
}
