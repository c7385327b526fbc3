import { WeirError } from '../../core/errors/weir-error.ts';

/** The options of `postgresSource`. */
export interface PostgresSourceOptions {
  /**
   * `postgres://user:password@host:port/database` of a role with REPLICATION (and SELECT on the
   * tables, for the snapshot). Default: libpq's variables (PGHOST, PGPORT, PGUSER, ...).
   */
  connectionString?: string;
  /** The logical replication slot (created by the source on its first start; lower-case letters, digits, `_`). */
  slot: string;
  /** The publication whose tables are read (`CREATE PUBLICATION name FOR TABLE ...`). */
  publication: string;
  /** Only these tables of the publication (`name` or `schema.name`); default all of them. */
  tables?: readonly string[];
  /**
   * `'initial'` (default): on the first start, read the tables as they are (as `op: 'snapshot'`
   * records) in the snapshot the slot is created with, then stream the changes after it.
   * `'never'`: only the changes, from the slot's position (an existing slot is used as it is).
   */
  snapshot?: 'initial' | 'never';
  /** Rows per FETCH of the snapshot. Default 1000. */
  snapshotFetchSize?: number;
  /** Changes decoded and not yet emitted, at most (the stream is paused beyond). Default 10000. */
  maxBufferedChanges?: number;
  /** Milliseconds between standby status updates (they keep the connection alive). Default 10000. */
  statusInterval?: number;
}

export interface ParsedPostgresSourceOptions {
  connectionString: string | undefined;
  slot: string;
  publication: string;
  tables: { schema: string; table: string }[] | undefined;
  snapshot: 'initial' | 'never';
  snapshotFetchSize: number;
  maxBufferedChanges: number;
  statusInterval: number;
}

function invalid(setting: string, message: string, hint: string): WeirError {
  return new WeirError('INVALID_SOURCE', `postgresSource ${setting}: ${message}`, { hint, fault: 'user' });
}

function positiveInteger(value: unknown, setting: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw invalid(setting, `${String(value)} is not a positive integer`, `give ${setting} a whole number of at least 1, or leave it out (default ${fallback})`);
  return value;
}

/** Validates the options once, when `postgresSource(...)` is called: a bad one names the setting and the fix. */
export function parsePostgresSourceOptions(options: PostgresSourceOptions): ParsedPostgresSourceOptions {
  const known = new Set(['connectionString', 'slot', 'publication', 'tables', 'snapshot', 'snapshotFetchSize', 'maxBufferedChanges', 'statusInterval']);
  for (const key of Object.keys(options)) if (!known.has(key)) throw invalid(key, 'is not an option', `use one of ${[...known].join(', ')}`);
  if (typeof options.slot !== 'string' || !/^[a-z0-9_]{1,63}$/.test(options.slot))
    throw invalid(
      'slot',
      `${JSON.stringify(options.slot)} is not a replication slot name`,
      'use 1 to 63 lower-case letters, digits and underscores, e.g. "weir_orders"',
    );
  if (typeof options.publication !== 'string' || options.publication === '' || options.publication.length > 63 || options.publication.includes('"'))
    throw invalid(
      'publication',
      `${JSON.stringify(options.publication)} is not a publication name`,
      'give the name of a publication (CREATE PUBLICATION name FOR TABLE ...), at most 63 bytes, without double quotes',
    );
  if (options.connectionString !== undefined && (typeof options.connectionString !== 'string' || options.connectionString === ''))
    throw invalid(
      'connectionString',
      'must be a postgres:// URL',
      'give a URL such as postgres://weir@127.0.0.1:5432/app, or leave it out to use the PG* environment variables',
    );
  if (options.snapshot !== undefined && options.snapshot !== 'initial' && options.snapshot !== 'never')
    throw invalid(
      'snapshot',
      `${JSON.stringify(options.snapshot)} is not 'initial' or 'never'`,
      "use 'initial' (read the tables first) or 'never' (only the changes)",
    );
  let tables: { schema: string; table: string }[] | undefined;
  if (options.tables !== undefined) {
    if (!Array.isArray(options.tables) || options.tables.length === 0)
      throw invalid('tables', 'must be a non-empty list', 'list tables of the publication, or leave it out for all of them');
    tables = options.tables.map((name) => {
      const match = typeof name === 'string' ? /^(?:([^.\0]{1,63})\.)?([^.\0]{1,63})$/.exec(name) : null;
      if (match === null)
        throw invalid(
          'tables',
          `${JSON.stringify(name)} is not "name" or "schema.name"`,
          'name each table as the catalog has it, e.g. "orders" or "sales.orders"',
        );
      return { schema: match[1] ?? 'public', table: match[2] as string };
    });
  }
  return {
    connectionString: options.connectionString,
    slot: options.slot,
    publication: options.publication,
    tables,
    snapshot: options.snapshot ?? 'initial',
    snapshotFetchSize: positiveInteger(options.snapshotFetchSize, 'snapshotFetchSize', 1000),
    maxBufferedChanges: positiveInteger(options.maxBufferedChanges, 'maxBufferedChanges', 10_000),
    statusInterval: positiveInteger(options.statusInterval, 'statusInterval', 10_000),
  };
}
