import type { PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';
import { describePostgresError } from '../postgres/postgres-errors.ts';
import type { ParsedPostgresSourceOptions } from './postgres-source-options.ts';
import { connectSource, quoteIdentifier } from './replication-connection.ts';

/** What the source's preflight reads of the server (plain data: the findings are testable without a server). */
export interface PostgresSourceFacts {
  serverVersionNum: number;
  walLevel: string;
  maxReplicationSlots: number;
  /** Slots in use (every database's). */
  slotsInUse: number;
  /** The source's slot, if it exists: its plugin and database, and whether a session reads it now. */
  slot: { plugin: string | null; database: string | null; active: boolean } | undefined;
  database: string;
  role: string;
  replicationRole: boolean;
  publicationExists: boolean;
  publishedTables: string[];
}

/** pg_copy_logical_replication_slot (the snapshot's slot made permanent) came in PostgreSQL 12. */
export const MIN_SOURCE_SERVER_VERSION_NUM = 120_000;

export async function readPostgresSourceFacts(options: ParsedPostgresSourceOptions, where: string): Promise<PostgresSourceFacts> {
  const client = await connectSource(options.connectionString, false, 'weir preflight', where);
  try {
    const server = (
      await client.query<{ version: string; wal_level: string; max_slots: string; in_use: string; database: string; role: string; replication: boolean }>(
        `SELECT current_setting('server_version_num') AS version, current_setting('wal_level') AS wal_level,
                current_setting('max_replication_slots') AS max_slots, (SELECT count(*) FROM pg_replication_slots) AS in_use,
                current_database() AS database, current_user AS role,
                (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user) AS replication`,
      )
    ).rows[0] as { version: string; wal_level: string; max_slots: string; in_use: string; database: string; role: string; replication: boolean };
    const slot = (
      await client.query<{ plugin: string | null; database: string | null; active: boolean }>(
        'SELECT plugin, database, active FROM pg_replication_slots WHERE slot_name = $1',
        [options.slot],
      )
    ).rows[0];
    const publication = await client.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [options.publication]);
    const tables = await client.query<{ name: string }>(
      "SELECT schemaname || '.' || tablename AS name FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1",
      [options.publication],
    );
    return {
      serverVersionNum: Number(server.version),
      walLevel: server.wal_level,
      maxReplicationSlots: Number(server.max_slots),
      slotsInUse: Number(server.in_use),
      slot,
      database: server.database,
      role: server.role,
      replicationRole: server.replication === true,
      publicationExists: publication.rows.length > 0,
      publishedTables: tables.rows.map((row) => row.name),
    };
  } finally {
    await client.end().catch(() => {});
  }
}

/** The findings for `facts`: each names the setting and the fix. */
export function postgresSourceFindings(options: ParsedPostgresSourceOptions, facts: PostgresSourceFacts, where: string): PreflightFinding[] {
  const findings: PreflightFinding[] = [];
  const error = (message: string, hint: string) => findings.push({ level: 'error', where, message: `${where}: ${message}`, hint });
  if (facts.serverVersionNum < MIN_SOURCE_SERVER_VERSION_NUM)
    error(`PostgreSQL ${facts.serverVersionNum} is too old for the source (it needs 12 or later)`, 'upgrade the server to PostgreSQL 12 or later');
  if (facts.walLevel !== 'logical')
    error(
      `wal_level is '${facts.walLevel}': logical replication needs wal_level = logical`,
      "set wal_level = logical (ALTER SYSTEM SET wal_level = 'logical', or in postgresql.conf) and restart PostgreSQL",
    );
  if (!facts.replicationRole)
    error(
      `role "${facts.role}" lacks the REPLICATION attribute, which a replication slot and its stream need`,
      `ALTER ROLE ${quoteIdentifier(facts.role)} WITH REPLICATION (as a superuser), or connect as a role that has it`,
    );
  if (!facts.publicationExists)
    error(
      `publication "${options.publication}" does not exist in database "${facts.database}"`,
      `create it: CREATE PUBLICATION ${quoteIdentifier(options.publication)} FOR TABLE <tables> (or FOR ALL TABLES)`,
    );
  else {
    for (const wanted of options.tables ?? []) {
      const name = `${wanted.schema}.${wanted.table}`;
      if (!facts.publishedTables.includes(name))
        error(
          `table ${name} is not in publication "${options.publication}"`,
          `ALTER PUBLICATION ${quoteIdentifier(options.publication)} ADD TABLE ${quoteIdentifier(wanted.schema)}.${quoteIdentifier(wanted.table)}, or take it out of tables`,
        );
    }
    if (options.tables === undefined && facts.publishedTables.length === 0)
      findings.push({
        level: 'warning',
        where,
        message: `${where}: publication "${options.publication}" has no tables: the source will read nothing`,
        hint: 'ALTER PUBLICATION ... ADD TABLE the tables to read',
      });
  }
  if (facts.slot === undefined) {
    // The source creates its slot (and, for the snapshot, a temporary one beside it).
    const needed = options.snapshot === 'initial' ? 2 : 1;
    if (facts.slotsInUse + needed > facts.maxReplicationSlots)
      error(
        `max_replication_slots (${facts.maxReplicationSlots}) is exhausted: ${facts.slotsInUse} slots exist and the source needs ${needed} more`,
        'drop slots no longer used (SELECT pg_drop_replication_slot(name) FROM pg_replication_slots WHERE NOT active ...) or raise max_replication_slots (and max_wal_senders) and restart PostgreSQL',
      );
  } else {
    if (facts.slot.plugin !== 'pgoutput' || facts.slot.database !== facts.database)
      error(
        `replication slot "${options.slot}" exists but is not a pgoutput slot of database "${facts.database}" (plugin ${facts.slot.plugin ?? 'none: a physical slot'}, database ${facts.slot.database ?? 'none'})`,
        `give the source another slot name, or drop that slot (SELECT pg_drop_replication_slot('${options.slot}'))`,
      );
    else if (facts.slot.active)
      error(
        `replication slot "${options.slot}" is being read by another session now`,
        'stop the other reader of the slot (another job?), or give this source its own slot',
      );
  }
  return findings;
}

/** The preflight: the server's settings, the role, the publication and the slot. */
export async function postgresSourcePreflight(options: ParsedPostgresSourceOptions, context: PreflightContext): Promise<PreflightFinding[]> {
  const where = `postgres source "${context.uid}"`;
  if (context.config.checkpointing === undefined) {
    return [
      {
        level: 'error',
        where,
        message: `${where} needs checkpointing: its position is confirmed to the server only when a checkpoint completes (without one the slot never moves on and the server keeps all its WAL)`,
        hint: "set checkpointing (e.g. config: { checkpointing: { interval: '10s', storage: ... } })",
      },
    ];
  }
  try {
    return postgresSourceFindings(options, await readPostgresSourceFacts(options, where), where);
  } catch (error) {
    return [
      {
        level: 'error',
        where,
        message: `${where}: cannot reach PostgreSQL: ${describePostgresError(error)}`,
        hint: 'check connectionString (or the PG* variables) and that the server is up',
      },
    ];
  }
}
