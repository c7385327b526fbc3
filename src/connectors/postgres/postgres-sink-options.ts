import { z } from 'zod';
import { functionOption, type OptionMeta, parseConnectorOptions, type Same } from '../connector-options.ts';
import { GID_PREFIX_PATTERN, MAX_GID_PREFIX_LENGTH } from './postgres-gid.ts';

/** A row as the sink writes it: one value per column (pg's conversions: numbers, strings, booleans, Dates, Buffers, bigints, null; objects as JSON). */
export type PostgresRow = Record<string, unknown>;

/**
 * The options of `postgresSink`. They are validated by the zod schema below; the two must agree,
 * and the typecheck says so when they do not.
 */
export interface PostgresSinkOptions<T, R extends PostgresRow = PostgresRow> {
  /**
   * `postgres://user:password@host:port/database`. Default: libpq's variables (PGHOST, PGPORT,
   * PGUSER, PGPASSWORD, PGDATABASE), as `psql` reads them.
   */
  connectionString?: string;
  /** The table, `name` or `schema.name`: exact names, as the catalog has them (quoted in the SQL). */
  table: string;
  /** The columns written, in this order; every row `toRow` returns has a value for each (a missing one is NULL). */
  columns: readonly (keyof R & string)[];
  /** Turns a record of the stream into a row. */
  toRow: (record: T) => R;
  /**
   * `'append'`: every record is a new row (INSERT). `'upsert'`: `INSERT ... ON CONFLICT (key) DO
   * UPDATE`, so each key's row holds the last record's values.
   */
  mode: 'append' | 'upsert';
  /** Upsert: the key columns, exactly the columns of the table's primary key or of one of its unique indexes. */
  key?: readonly (keyof R & string)[];
  /** Rows per INSERT statement (fewer when the columns would pass PostgreSQL's 65535 parameters). Default 500. */
  batchSize?: number;
  /**
   * `'exactly-once'` (default): one prepared transaction per subtask per checkpoint, committed when
   * the checkpoint completes; the server must allow prepared transactions
   * (`max_prepared_transactions` > 0). `'at-least-once'`: plain transactions committed at each
   * barrier, for servers without prepared transactions; after a failure the rows since the last
   * completed checkpoint are written again: exact in its final state in mode `'upsert'`, duplicates
   * possible in mode `'append'`.
   */
  deliveryGuarantee?: 'exactly-once' | 'at-least-once';
  /**
   * The prefix of the prepared transactions' gids, `<prefix>-<subtask>-<checkpoint id>-o<run>` (run: the subtask's run, a random token in one process, the task's producer id and epoch in cluster mode). It must
   * stay the same across restarts and upgrades of the job (a restart rolls back the lingering
   * prepared transactions under it), and two running jobs must never share one. Default
   * `weir-<job name>-<sink uid>`.
   */
  gidPrefix?: string;
}

export const DEFAULT_POSTGRES_BATCH_SIZE = 500;

/** PostgreSQL's limit of parameters in one statement (a 16-bit count in the protocol). */
export const MAX_STATEMENT_PARAMETERS = 65_535;

const identifier = (what: string) =>
  z
    .string()
    .min(1)
    .max(63, { error: `must be at most 63 bytes (PostgreSQL's NAMEDATALEN)` })
    .refine((name) => !name.includes('\0'), `must not contain a zero byte`)
    .meta({ description: what } satisfies OptionMeta);

/** The PostgreSQL sink's options as a zod schema: validated once when `postgresSink(...)` is called. */
export const postgresSinkOptionsSchema = z
  .strictObject({
    connectionString: z
      .string()
      .min(1)
      .optional()
      .meta({
        description: 'postgres://user:password@host:port/database.',
        hint: 'give a URL such as postgres://weir@127.0.0.1:5432/app, or set PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE',
        defaultText: "libpq's PG* environment variables",
      } satisfies OptionMeta),
    table: z
      .string()
      .regex(/^[^.\0]{1,63}(\.[^.\0]{1,63})?$/, {
        error: (issue) => `postgresSink table ${JSON.stringify(issue.input)} must be "name" or "schema.name" (each at most 63 bytes, no dots inside names)`,
      })
      .meta({
        description: 'The table, `name` or `schema.name`: exact names as the catalog has them (they are quoted in the SQL).',
        hint: 'give the table as its catalog has it, e.g. "totals" or "public.totals"',
      } satisfies OptionMeta),
    columns: z
      .array(identifier('a column'))
      .min(1)
      .refine((columns) => new Set(columns).size === columns.length, 'names a column twice')
      .meta({
        description: 'The columns written, in this order.',
        hint: "list the table's columns the rows set, e.g. columns: ['key', 'total']",
      } satisfies OptionMeta),
    toRow: functionOption<(record: never) => PostgresRow>('(record) => ({ column: value, ... })').meta({
      description: 'Turns a record into a row: one value per column.',
      hint: 'pass toRow: (record) => ({ key: record.key, total: record.sum })',
      typeText: '(record: T) => R',
    } satisfies OptionMeta),
    mode: z.enum(['append', 'upsert']).meta({
      description: "`'append'`: INSERT every row. `'upsert'`: INSERT ... ON CONFLICT (key) DO UPDATE: each key's row holds its last values.",
      hint: "use 'append' or 'upsert' (with key: [...])",
    } satisfies OptionMeta),
    key: z
      .array(identifier('a key column'))
      .min(1)
      .optional()
      .meta({
        description: "Upsert: the key columns, exactly those of the table's primary key or of a unique index.",
        hint: "give key: ['key'], the columns of the table's primary key",
      } satisfies OptionMeta),
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(MAX_STATEMENT_PARAMETERS)
      .default(DEFAULT_POSTGRES_BATCH_SIZE)
      .meta({ description: 'Rows per INSERT statement.', hint: 'give a whole number such as 500' } satisfies OptionMeta),
    deliveryGuarantee: z
      .enum(['exactly-once', 'at-least-once'])
      .default('exactly-once')
      .meta({
        description:
          "`'exactly-once'`: one prepared transaction per subtask per checkpoint, committed when the checkpoint completes (needs max_prepared_transactions > 0). `'at-least-once'`: plain transactions committed at each barrier; after a failure rows are written again (exact in its final state with mode 'upsert').",
        hint: "use 'exactly-once' (it needs max_prepared_transactions > 0 on the server) or 'at-least-once' (with mode 'upsert' for an exact final state)",
      } satisfies OptionMeta),
    gidPrefix: z
      .string()
      .max(MAX_GID_PREFIX_LENGTH)
      .regex(GID_PREFIX_PATTERN, {
        error: (issue) => `postgresSink gidPrefix ${JSON.stringify(issue.input)} has characters other than letters, digits, ".", "_" and "-"`,
      })
      .optional()
      .meta({
        description:
          "The prefix of the prepared transactions' gids, `<prefix>-<subtask>-<checkpoint id>-o<run>` (run: the subtask's run, a random token in one process, the task's producer id and epoch in cluster mode). It must stay the same across restarts and upgrades of the job (a restart rolls back the lingering prepared transactions under it), and two running jobs must never share one.",
        hint: `choose a prefix of letters, digits, ".", "_" and "-", at most ${MAX_GID_PREFIX_LENGTH} characters`,
        defaultText: '`weir-<job name>-<sink uid>`',
      } satisfies OptionMeta),
  })
  .superRefine((options, context) => {
    if (options.mode === 'upsert' && options.key === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['key'],
        message: "is required in mode 'upsert': the columns ON CONFLICT names",
        params: { hint: "give key: ['key'], the columns of the table's primary key" },
      });
    }
    if (options.deliveryGuarantee === 'at-least-once' && options.gidPrefix !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['gidPrefix'],
        message: "is for deliveryGuarantee 'exactly-once' only (at-least-once prepares no transactions)",
        params: { hint: "remove gidPrefix, or use deliveryGuarantee: 'exactly-once'" },
      });
    }
    if (options.mode === 'append' && options.key !== undefined) {
      context.addIssue({ code: 'custom', path: ['key'], message: "is for mode 'upsert' only", params: { hint: "remove key, or use mode: 'upsert'" } });
    }
    for (const column of options.key ?? []) {
      if (!options.columns.includes(column)) {
        context.addIssue({
          code: 'custom',
          path: ['key'],
          message: `names "${column}", which is not one of the columns written (${options.columns.join(', ')})`,
          params: { hint: 'every key column must be one of columns' },
        });
      }
    }
  });

/** The sink's options once validated: defaults applied. */
export type ParsedPostgresSinkOptions<T, R extends PostgresRow> = Omit<PostgresSinkOptions<T, R>, 'batchSize' | 'deliveryGuarantee' | 'columns' | 'key'> & {
  columns: readonly string[];
  key: readonly string[] | undefined;
  batchSize: number;
  deliveryGuarantee: 'exactly-once' | 'at-least-once';
};

/** Validates postgresSink's options: one clear INVALID_SINK error naming each bad setting and its fix. */
export function parsePostgresSinkOptions<T, R extends PostgresRow>(options: PostgresSinkOptions<T, R>): ParsedPostgresSinkOptions<T, R> {
  return parseConnectorOptions(postgresSinkOptionsSchema, options, 'postgresSink', 'INVALID_SINK') as unknown as ParsedPostgresSinkOptions<T, R>;
}

// The interface above and the schema must agree; typecheck fails when they drift.
type SinkInput = z.input<typeof postgresSinkOptionsSchema>;
type Plain = 'toRow' | 'columns' | 'key';
export type PostgresSinkOptionsMatchSchema = Same<Omit<PostgresSinkOptions<never>, Plain>, Omit<SinkInput, Plain>> extends true ? true : never;
const sinkOptionsMatch: PostgresSinkOptionsMatchSchema = true;
void sinkOptionsMatch;
