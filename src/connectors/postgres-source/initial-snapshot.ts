import type pg from 'pg';
import { WeirError } from '../../core/errors/weir-error.ts';
import { postgresFailure } from '../postgres/postgres-errors.ts';
import { type Lsn, parseLsn } from './lsn.ts';
import { typedValue } from './pgoutput-values.ts';
import type { PostgresChangeRecord, PostgresSourceRow } from './postgres-change-record.ts';
import type { ParsedPostgresSourceOptions } from './postgres-source-options.ts';
import { connectSource, quoteIdentifier, TEXT_TYPES } from './replication-connection.ts';

/**
 * The temporary slot the snapshot is exported from (dropped by PostgreSQL when its session ends,
 * however it ends; a name of its own each time, as the session of a failed attempt may still be ending).
 */
export function snapshotSlotName(slot: string): string {
  return `${slot.slice(0, 44)}_snapshot_${Math.floor(Math.random() * 0xffffffff)
    .toString(16)
    .padStart(8, '0')}`;
}

/**
 * The initial snapshot, as Flink CDC's Postgres connector takes it: a TEMPORARY logical slot is
 * created with an exported snapshot (`CREATE_REPLICATION_SLOT ... TEMPORARY LOGICAL pgoutput
 * EXPORT_SNAPSHOT`, the syntax of every version since 10), the publication's tables are read in that snapshot on a second
 * connection (a cursor, `snapshotFetchSize` rows per FETCH) and, once read whole, the slot is
 * copied into the source's permanent slot (`pg_copy_logical_replication_slot`: same consistent
 * point), from which the change stream starts. A crash before the end leaves nothing behind: the
 * temporary slot goes with its session, and the permanent slot does not exist yet.
 */
export class InitialSnapshot {
  readonly #options: ParsedPostgresSourceOptions;
  readonly #slotConnection: pg.Client;
  readonly #reader: pg.Client;
  readonly #tables: { schema: string; table: string }[];
  readonly #where: string;
  /** The slot's consistent point: the snapshot holds every transaction committed before it, the stream every one after. */
  readonly consistentPoint: Lsn;
  readonly #consistentPointText: string;
  readonly #time: number;
  readonly #temporarySlot: string;
  #table = -1;
  #cursorOpen = false;

  private constructor(
    options: ParsedPostgresSourceOptions,
    where: string,
    temporarySlot: string,
    slotConnection: pg.Client,
    reader: pg.Client,
    tables: { schema: string; table: string }[],
    consistentPoint: string,
  ) {
    this.#options = options;
    this.#temporarySlot = temporarySlot;
    this.#where = where;
    this.#slotConnection = slotConnection;
    this.#reader = reader;
    this.#tables = tables;
    this.#consistentPointText = consistentPoint;
    this.consistentPoint = parseLsn(consistentPoint);
    this.#time = Date.now();
  }

  static async begin(options: ParsedPostgresSourceOptions, where: string, applicationName: string): Promise<InitialSnapshot> {
    const slotConnection = await connectSource(options.connectionString, true, `${applicationName} snapshot slot`, where);
    let reader: pg.Client | undefined;
    const temporarySlot = snapshotSlotName(options.slot);
    try {
      const created = await slotConnection.query<{ consistent_point: string; snapshot_name: string }>(
        `CREATE_REPLICATION_SLOT ${temporarySlot} TEMPORARY LOGICAL pgoutput EXPORT_SNAPSHOT`,
      );
      const { consistent_point: consistentPoint, snapshot_name: snapshotName } = created.rows[0] as { consistent_point: string; snapshot_name: string };
      reader = await connectSource(options.connectionString, false, `${applicationName} snapshot`, where);
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await reader.query(`SET TRANSACTION SNAPSHOT '${snapshotName.replaceAll("'", "''")}'`);
      const tables = await publishedTables(reader, options, where);
      return new InitialSnapshot(options, where, temporarySlot, slotConnection, reader, tables, consistentPoint);
    } catch (error) {
      await slotConnection.end().catch(() => {});
      await reader?.end().catch(() => {});
      throw postgresFailure(where, 'starting the initial snapshot', error);
    }
  }

  /** Up to `snapshotFetchSize` rows as 'snapshot' records; null once every table is read. */
  async next(): Promise<PostgresChangeRecord[] | null> {
    try {
      for (;;) {
        if (!this.#cursorOpen) {
          this.#table++;
          const next = this.#tables[this.#table];
          if (next === undefined) return null;
          await this.#reader.query(`DECLARE weir_snapshot NO SCROLL CURSOR FOR SELECT * FROM ${quoteIdentifier(next.schema)}.${quoteIdentifier(next.table)}`);
          this.#cursorOpen = true;
        }
        const { schema, table } = this.#tables[this.#table] as { schema: string; table: string };
        const result = await this.#reader.query({ text: `FETCH ${this.#options.snapshotFetchSize} FROM weir_snapshot`, types: TEXT_TYPES, rowMode: 'array' });
        if (result.rows.length === 0) {
          await this.#reader.query('CLOSE weir_snapshot');
          this.#cursorOpen = false;
          continue;
        }
        const fields = result.fields;
        const records: PostgresChangeRecord[] = new Array(result.rows.length);
        for (let r = 0; r < result.rows.length; r++) {
          const values = result.rows[r] as (string | null)[];
          const after: PostgresSourceRow = {};
          for (let c = 0; c < fields.length; c++) {
            const field = fields[c] as pg.FieldDef;
            after[field.name] = typedValue(values[c] ?? null, field.dataTypeID);
          }
          records[r] = {
            op: 'snapshot',
            schema,
            table,
            after,
            lsn: this.#consistentPointText,
            commitLsn: this.#consistentPointText,
            commitTime: this.#time,
            xid: 0,
          };
        }
        return records;
      }
    } catch (error) {
      throw postgresFailure(this.#where, `reading the initial snapshot of ${this.#tables[this.#table]?.schema}.${this.#tables[this.#table]?.table}`, error);
    }
  }

  /** Read whole: the source's permanent slot, at the snapshot's consistent point; the temporary one is dropped. */
  async finish(): Promise<void> {
    try {
      await this.#reader.query('COMMIT');
      await this.#reader.query('SELECT pg_copy_logical_replication_slot($1, $2, false)', [this.#temporarySlot, this.#options.slot]);
    } catch (error) {
      throw postgresFailure(this.#where, `creating replication slot "${this.#options.slot}" from the snapshot's`, error);
    } finally {
      await this.close();
    }
  }

  async close(): Promise<void> {
    await this.#reader.end().catch(() => {});
    await this.#slotConnection.end().catch(() => {});
  }
}

/** The publication's tables (those of `tables` only, each of which must be in it), in a stable order. */
async function publishedTables(client: pg.Client, options: ParsedPostgresSourceOptions, where: string): Promise<{ schema: string; table: string }[]> {
  const rows = (
    await client.query<{ schema: string; table: string }>(
      'SELECT schemaname AS schema, tablename AS table FROM pg_publication_tables WHERE pubname = $1 ORDER BY schemaname, tablename',
      [options.publication],
    )
  ).rows;
  if (options.tables === undefined) return rows;
  for (const wanted of options.tables) {
    if (!rows.some((row) => row.schema === wanted.schema && row.table === wanted.table)) {
      throw new WeirError('INVALID_SOURCE', `${where}: table ${wanted.schema}.${wanted.table} is not in publication "${options.publication}"`, {
        hint: `add it (ALTER PUBLICATION ${quoteIdentifier(options.publication)} ADD TABLE ${quoteIdentifier(wanted.schema)}.${quoteIdentifier(wanted.table)}) or take it out of tables`,
        fault: 'user',
      });
    }
  }
  return options.tables;
}
