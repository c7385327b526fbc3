import type { PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';
import { describePostgresError } from './postgres-errors.ts';
import { defaultGidPrefix } from './postgres-gid.ts';
import { type PrefixUse, prefixInUseFindings, readPrefixUse } from './postgres-prefix-in-use.ts';
import type { ParsedPostgresSinkOptions, PostgresRow } from './postgres-sink-options.ts';
import { quoteTable, tableParts } from './postgres-statements.ts';

/** pg_current_xact_id() and pg_xact_status(), which tell a committed prepared transaction from a lost one, came in PostgreSQL 13. */
export const MIN_SERVER_VERSION_NUM = 130_000;

/** What the preflight reads of the server, the table and the role (one query each; plain data, so the findings are testable without a server). */
export interface PostgresFacts {
  serverVersionNum: number;
  maxPreparedTransactions: number;
  database: string;
  role: string;
  /** undefined when the table does not exist (to_regclass found nothing). */
  table:
    | {
        columns: string[];
        /** The column sets of the primary key and of every unique index without a predicate. */
        uniqueKeys: string[][];
        /** The rights of the role on each written column. */
        rights: { column: string; insert: boolean; update: boolean; select: boolean }[];
      }
    | undefined;
  /** Who uses the sink's gid prefix (read when the sink is exactly-once). */
  prefixUse?: PrefixUse & { prefix: string };
}

/** Reads {@link PostgresFacts} over one connection. */
export async function readPostgresFacts(
  connectionString: string | undefined,
  table: string,
  columns: readonly string[],
  gids?: { prefix: string; predecessorGone: string | undefined },
): Promise<PostgresFacts> {
  const { default: postgres } = await import('pg');
  const client = new postgres.Client(connectionString === undefined ? {} : { connectionString });
  client.on('error', () => {});
  await client.connect();
  try {
    const server = await client.query<{ version: string; prepared: string; database: string; role: string }>(
      "SELECT current_setting('server_version_num') AS version, current_setting('max_prepared_transactions') AS prepared, current_database() AS database, current_user AS role",
    );
    const row = server.rows[0] as { version: string; prepared: string; database: string; role: string };
    const facts: PostgresFacts = {
      serverVersionNum: Number(row.version),
      maxPreparedTransactions: Number(row.prepared),
      database: row.database,
      role: row.role,
      table: undefined,
    };
    if (gids !== undefined) facts.prefixUse = { prefix: gids.prefix, ...(await readPrefixUse(client, gids.prefix, gids.predecessorGone)) };
    const found = await client.query<{ oid: number | null }>('SELECT to_regclass($1)::oid AS oid', [quoteTable(table)]);
    const oid = found.rows[0]?.oid ?? null;
    if (oid === null) return facts;
    const tableColumns = await client.query<{ name: string }>(
      'SELECT attname AS name FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum',
      [oid],
    );
    const uniqueKeys = await client.query<{ columns: string[] }>(
      `SELECT array_agg(a.attname::text ORDER BY a.attname) AS columns
         FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
        GROUP BY i.indexrelid`,
      [oid],
    );
    const names = tableColumns.rows.map((entry) => entry.name);
    const present = columns.filter((column) => names.includes(column));
    const rights = await client.query<{ column: string; insert: boolean; update: boolean; select: boolean }>(
      `SELECT c AS column, has_column_privilege($1::oid, c, 'INSERT') AS insert, has_column_privilege($1::oid, c, 'UPDATE') AS update,
              has_column_privilege($1::oid, c, 'SELECT') AS select
         FROM unnest($2::text[]) AS c`,
      [oid, present],
    );
    facts.table = { columns: names, uniqueKeys: uniqueKeys.rows.map((entry) => entry.columns), rights: rights.rows };
    return facts;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The findings about these facts: each problem named, with the fix. */
export function postgresFindings<T, R extends PostgresRow>(
  where: string,
  options: ParsedPostgresSinkOptions<T, R>,
  facts: PostgresFacts,
  context: Pick<PreflightContext, 'config'>,
): PreflightFinding[] {
  const findings: PreflightFinding[] = [];
  const error = (message: string, hint: string) => findings.push({ level: 'error', where, message: `${where}: ${message}`, hint });
  if (options.deliveryGuarantee === 'at-least-once') {
    // Plain transactions committed at the barrier: no prepared transactions, no gids, no locks held across a barrier.
    if (options.mode === 'append') {
      findings.push({
        level: 'warning',
        where,
        message: `${where} is at-least-once in mode 'append': after a failure the rows written since the latest completed checkpoint are inserted again, so table "${options.table}" can hold duplicates`,
        hint: "use mode 'upsert' with a key (at-least-once upserts end exact), or deliveryGuarantee 'exactly-once' (needs max_prepared_transactions > 0)",
      });
    }
  } else {
    exactlyOnceFindings(where, options, facts, context, error, findings);
  }
  tableFindings(options, facts, error);
  return findings;
}

/** What exactly-once needs of the server: version, prepared transactions, one checkpoint at a time, a gid prefix of its own. */
function exactlyOnceFindings<T, R extends PostgresRow>(
  where: string,
  options: ParsedPostgresSinkOptions<T, R>,
  facts: PostgresFacts,
  context: Pick<PreflightContext, 'config'>,
  error: (message: string, hint: string) => void,
  findings: PreflightFinding[],
): void {
  if (facts.serverVersionNum < MIN_SERVER_VERSION_NUM) {
    error(
      `the server is PostgreSQL ${Math.floor(facts.serverVersionNum / 10_000)}; the sink needs 13 or later (pg_current_xact_id and pg_xact_status tell a committed prepared transaction from a lost one)`,
      'upgrade PostgreSQL to 13 or later',
    );
  }
  const maxConcurrent = context.config.checkpointing?.maxConcurrent ?? 1;
  const parallelism = context.config.parallelism ?? 1;
  // Each subtask holds a prepared transaction per pending checkpoint, plus the one being prepared.
  const needed = parallelism * (maxConcurrent + 1);
  if (facts.maxPreparedTransactions === 0) {
    error(
      "the server's max_prepared_transactions is 0 (PostgreSQL's default), so it refuses PREPARE TRANSACTION, which the exactly-once sink commits through",
      `set max_prepared_transactions to at least ${needed} (this job's parallelism x (checkpointing.maxConcurrent + 1)): ALTER SYSTEM SET max_prepared_transactions = ${Math.max(needed, 10)} (or in postgresql.conf), then restart PostgreSQL`,
    );
  } else if (facts.maxPreparedTransactions < needed) {
    findings.push({
      level: 'warning',
      where,
      message: `${where}: the server's max_prepared_transactions is ${facts.maxPreparedTransactions}; this sink alone can hold ${needed} prepared transactions at once (parallelism ${parallelism} x (checkpointing.maxConcurrent ${maxConcurrent} + 1)), and the server's other users share the limit`,
      hint: `raise max_prepared_transactions to at least ${needed} and restart PostgreSQL`,
    });
  }
  if (maxConcurrent > 1) {
    error(
      `checkpointing.maxConcurrent is ${maxConcurrent}: a prepared transaction keeps its row locks until its checkpoint completes, so the next checkpoint's rows wait for that commit, and a barrier that comes first restarts the job`,
      'set checkpointing.maxConcurrent to 1 (the default) for a job with a postgres sink',
    );
  }
  if (facts.prefixUse !== undefined) {
    const { prefix } = facts.prefixUse;
    const setting =
      options.gidPrefix === undefined
        ? `set the sink's gidPrefix (its default, weir-<job name>-<sink uid>, is "${prefix}")`
        : `change the sink's gidPrefix (set to "${prefix}")`;
    findings.push(...prefixInUseFindings(where, prefix, { database: facts.database, role: facts.role }, facts.prefixUse, setting));
  }
}

/** The table, its columns, the upsert's key and the role's rights. */
function tableFindings<T, R extends PostgresRow>(
  options: ParsedPostgresSinkOptions<T, R>,
  facts: PostgresFacts,
  error: (message: string, hint: string) => void,
): void {
  const { schema } = tableParts(options.table);
  if (facts.table === undefined) {
    error(
      `table "${options.table}" does not exist in database "${facts.database}"${schema === undefined ? ` (on role "${facts.role}"'s search_path)` : ''}`,
      `create it first (Weir does not create tables), or fix the sink's table option: names are exact, so a table created as Totals without quotes is "totals"`,
    );
    return;
  }
  const missing = options.columns.filter((column) => !facts.table?.columns.includes(column));
  if (missing.length > 0) {
    error(
      `table "${options.table}" has no column${missing.length > 1 ? 's' : ''} ${missing.map((column) => `"${column}"`).join(', ')} (it has ${facts.table.columns.map((column) => `"${column}"`).join(', ')})`,
      "fix the sink's columns (exact names), or add the columns to the table",
    );
  }
  if (options.mode === 'upsert' && options.key !== undefined) {
    const wanted = [...options.key].sort();
    const matches = facts.table.uniqueKeys.some(
      (columns) => columns.length === wanted.length && [...columns].sort().every((column, i) => column === wanted[i]),
    );
    if (!matches) {
      const keyText = options.key.map((column) => `"${column}"`).join(', ');
      error(
        `table "${options.table}" has no primary key or unique index on exactly (${keyText}), which ON CONFLICT (${keyText}) needs`,
        `add one: ALTER TABLE ${quoteTable(options.table)} ADD PRIMARY KEY (${keyText}) (or CREATE UNIQUE INDEX ... ON ${quoteTable(options.table)} (${keyText})), or fix the sink's key`,
      );
    }
  }
  const lacking = new Map<string, string[]>();
  for (const right of facts.table.rights) {
    const isKey = options.key?.includes(right.column) ?? false;
    const need = (privilege: string, has: boolean) => {
      if (!has) lacking.set(privilege, [...(lacking.get(privilege) ?? []), right.column]);
    };
    need('INSERT', right.insert);
    if (options.mode === 'upsert' && !isKey) need('UPDATE', right.update);
    if (options.mode === 'upsert' && isKey) need('SELECT', right.select);
  }
  if (lacking.size > 0) {
    const privileges = [...lacking.keys()];
    error(
      `role "${facts.role}" lacks ${[...lacking].map(([privilege, columns]) => `${privilege} on ${columns.map((column) => `"${column}"`).join(', ')}`).join(' and ')} of table "${options.table}"${options.mode === 'upsert' ? ' (an upsert inserts, updates its non-key columns and reads its key columns)' : ''}`,
      `GRANT ${privileges.join(', ')} ON ${quoteTable(options.table)} TO ${JSON.stringify(facts.role)}, or connect as a role that has them`,
    );
  }
}

/** The sink's preflight: the facts read, or one finding saying the database cannot be reached. */
export async function postgresPreflight<T, R extends PostgresRow>(
  options: ParsedPostgresSinkOptions<T, R>,
  context: PreflightContext,
): Promise<PreflightFinding[]> {
  const where = `postgres sink "${context.uid}"`;
  let facts: PostgresFacts;
  try {
    const gids =
      options.deliveryGuarantee === 'exactly-once'
        ? { prefix: options.gidPrefix ?? defaultGidPrefix(context.jobName, context.uid), predecessorGone: context.predecessorGone }
        : undefined;
    facts = await readPostgresFacts(options.connectionString, options.table, options.columns, gids);
  } catch (error) {
    return [
      {
        level: 'error',
        where,
        message: `${where}: cannot reach PostgreSQL${describeTarget(options.connectionString)}: ${describePostgresError(error)}`,
        hint: 'check connectionString (or PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE), that the server is up and that pg_hba.conf lets the role in',
      },
    ];
  }
  return postgresFindings(where, options, facts, context);
}

/** Where the sink connects, without the password. */
function describeTarget(connectionString: string | undefined): string {
  if (connectionString === undefined) return ` (PG* environment: ${process.env.PGHOST ?? 'localhost'}:${process.env.PGPORT ?? '5432'})`;
  try {
    const url = new URL(connectionString);
    return ` at ${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return '';
  }
}
