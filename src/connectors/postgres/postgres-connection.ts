import type pg from 'pg';
import { postgresFailure } from './postgres-errors.ts';

/**
 * A connection of a sink subtask, named `applicationName` in pg_stat_activity. A connection lost
 * between requests must not crash the process: the error is swallowed here and the next request on
 * the connection fails (and with it the task).
 */
export async function connectPostgres(connectionString: string | undefined, applicationName: string, where: string): Promise<pg.Client> {
  // pg loads when a sink first connects, not with every job that imports the package (nor in every worker thread).
  const { default: postgres } = await import('pg');
  const client = new postgres.Client({
    ...(connectionString === undefined ? {} : { connectionString }),
    application_name: applicationName,
  });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw postgresFailure(where, 'connecting to PostgreSQL', error);
  }
  return client;
}

/** A statement as the writers send it: SQL text, or a prepared statement's config (name, text, values). */
export type PostgresQuery = string | pg.QueryConfig;

/**
 * Sends `queries` on `client` one after the other, each once the one before has answered (what pg's
 * own queue does on the wire, without queueing several queries on a busy client, which pg 8
 * deprecates): the promise settles with the last answer or the first failure, while the task goes on.
 */
export async function sendInOrder(client: pg.Client, queries: readonly PostgresQuery[]): Promise<void> {
  for (const query of queries) await client.query(query);
}

/** Waits for a batch's statements sent earlier (sendInOrder), their failure named as the writer's (`what`, at `where`). */
export async function settleWrites(inFlight: Promise<unknown> | undefined, where: string, what: string): Promise<void> {
  if (inFlight === undefined) return;
  try {
    await inFlight;
  } catch (error) {
    throw postgresFailure(where, what, error);
  }
}
