import pg from 'pg';
import { postgresFailure } from './postgres-errors.ts';

/**
 * A connection of a sink subtask, named `applicationName` in pg_stat_activity. A connection lost
 * between requests must not crash the process: the error is swallowed here and the next request on
 * the connection fails (and with it the task).
 */
export async function connectPostgres(connectionString: string | undefined, applicationName: string, where: string): Promise<pg.Client> {
  const client = new pg.Client({
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
