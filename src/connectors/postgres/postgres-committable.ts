import type { PostgresRow } from './postgres-sink-options.ts';

/** A transaction of the sink: open on the writing connection once a row was written. */
export interface PostgresTransaction {
  began: boolean;
  rows: number;
}

/** What the checkpoint holds of a prepared transaction: its gid, and its transaction id to tell "committed" from "lost" when the gid is gone. */
export interface PostgresCommittable {
  gid: string;
  /** pg_current_xact_id() of the transaction (xid8 as text: epoch-qualified, never wraps). */
  xid: string;
  /**
   * A barrier that came while the previous checkpoint's transaction was still prepared: the rows
   * of this checkpoint, not yet written (they would wait on that transaction's row locks). Its
   * transaction is open (its xid taken), and they are written into it and it is prepared once the
   * previous one has committed, before this one commits. A restore that finds the transaction
   * never prepared (rolled back with the crashed run) writes these rows again.
   */
  carried?: PostgresRow[];
}

/** The 32-bit transaction id (pg_prepared_xacts.transaction) of an xid8 (epoch-qualified, as text); undefined when there is none to tell. */
export function xid32(xid8: string | undefined): string | undefined {
  return typeof xid8 === 'string' && /^\d+$/.test(xid8) ? (BigInt(xid8) & 0xffffffffn).toString() : undefined;
}
