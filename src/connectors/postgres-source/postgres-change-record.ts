import type { PostgresValue } from './pgoutput-values.ts';

/** A row as the source emits it: column name -> typed value (pgoutput-values.ts). */
export type PostgresSourceRow = Record<string, PostgresValue>;

/**
 * One change of a table, as `postgresSource` emits it (Flink CDC's change records, flattened):
 * - `'snapshot'`: a row of the initial snapshot (`after`);
 * - `'insert'` (`after`), `'update'` (`after`, and `before` when the table's replica identity sends
 *   it: its key columns when the key changed, every column with REPLICA IDENTITY FULL), `'delete'`
 *   (`before`: the key columns, or every column with REPLICA IDENTITY FULL);
 * - `'truncate'`: the table was truncated (no row).
 * A TOASTed value an update left unchanged is not sent by PostgreSQL: its column is missing from `after`.
 */
export interface PostgresChangeRecord {
  op: 'snapshot' | 'insert' | 'update' | 'delete' | 'truncate';
  schema: string;
  table: string;
  before?: PostgresSourceRow;
  after?: PostgresSourceRow;
  /** The change's WAL position, `X/Y` (a snapshot row: the slot's consistent point). */
  lsn: string;
  /** The WAL position of its transaction's commit (a snapshot row: the consistent point); changes are emitted in commit order. */
  commitLsn: string;
  /** The commit's time, milliseconds since 1970 (a snapshot row: when the snapshot was taken). */
  commitTime: number;
  /** The transaction id (0 for snapshot rows). */
  xid: number;
}

/**
 * The source's checkpointed state (its one split). `lsn`: every change of the transactions that
 * committed before it has been emitted (the end of the last one's commit record, or the snapshot's
 * consistent point); `partial`: the first `emitted` changes of the transaction committing at
 * `commitLsn` have been emitted too (a transaction split over polls). `phase: 'snapshot'` is a
 * checkpoint taken before any snapshot row was emitted (a fresh start or the snapshot to do again).
 */
export interface PostgresSourceSplit {
  slot: string;
  phase: 'snapshot' | 'streaming';
  lsn: string | null;
  partial?: { commitLsn: string; emitted: number } | undefined;
  /** Set only in the split of a fresh start (never checkpointed): an existing slot is then not the job's own. */
  fresh?: boolean;
}
