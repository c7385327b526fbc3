import type pg from 'pg';
import { postgresFailure } from '../postgres/postgres-errors.ts';
import { POSTGRES_SOURCE_SESSION_OPTIONS } from './pgoutput-values.ts';

/**
 * A connection of the source: `replication: 'database'` for the walsender (replication commands:
 * CREATE_REPLICATION_SLOT, START_REPLICATION), else a normal one (the snapshot's reads, the
 * catalog). Both with the session settings the values' text depends on. A connection lost between
 * requests does not crash the process: the next request fails (and with it the task).
 */
export async function connectSource(connectionString: string | undefined, replication: boolean, applicationName: string, where: string): Promise<pg.Client> {
  const { default: postgres } = await import('pg');
  const client = new postgres.Client({
    ...(connectionString === undefined ? {} : { connectionString }),
    application_name: applicationName,
    options: POSTGRES_SOURCE_SESSION_OPTIONS,
    ...(replication ? { replication: 'database' } : {}),
  } as pg.ClientConfig);
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    throw postgresFailure(where, `connecting to PostgreSQL${replication ? ' for replication' : ''}`, error);
  }
  return client;
}

/** Text as pg returns every column, so values are typed by pgoutput-values.ts the same way as the stream's. */
export const TEXT_TYPES = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

/** `"name"`, quoted as an SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
