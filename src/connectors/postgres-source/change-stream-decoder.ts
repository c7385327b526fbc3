import { formatLsn, type Lsn, postgresTimeToMillis } from './lsn.ts';
import { decodePgoutput, type PgoutputColumn, type PgoutputValue, UNCHANGED_TOAST } from './pgoutput-decoder.ts';
import { typedValue } from './pgoutput-values.ts';
import type { PostgresChangeRecord, PostgresSourceRow } from './postgres-change-record.ts';
import { decodeReplicationMessage } from './replication-messages.ts';

/**
 * What the decoded stream hands the reader, in order: changes, the commit of their transaction
 * (the position moves past it once every change before it is emitted), a position reached between
 * transactions (a keepalive's), or a keepalive that asks for an answer now.
 */
export type StreamItem = { kind: 'change'; record: PostgresChangeRecord } | { kind: 'commit'; endLsn: Lsn } | { kind: 'position'; lsn: Lsn };

interface Relation {
  schema: string;
  table: string;
  columns: PgoutputColumn[];
  wanted: boolean;
}

/**
 * Turns the replication stream's CopyData frames into {@link StreamItem}s: pgoutput decoded, the
 * values typed by each relation's column types, and, after a restore, what the checkpoint holds
 * already skipped: a transaction whose commit is before the restored position (`lsn`: the end of
 * the last transaction emitted whole), and the first `emitted` changes of the transaction a
 * checkpoint split (`partial`). A position is handed on only between transactions: a keepalive
 * inside one may already be past its commit.
 */
export class ChangeStreamDecoder {
  readonly #relations = new Map<number, Relation>();
  readonly #wanted: ((schema: string, table: string) => boolean) | undefined;
  #position: Lsn;
  #partial: { commitLsn: Lsn; emitted: number } | undefined;
  #inTransaction = false;
  #skipTransaction = false;
  #skipChanges = 0;
  #commitLsn = '';
  #commitTime = 0;
  #xid = 0;
  /** Changes skipped as already checkpointed (for the log). */
  skipped = 0;

  constructor(restored: { lsn: Lsn; partial?: { commitLsn: Lsn; emitted: number } | undefined }, wanted?: (schema: string, table: string) => boolean) {
    this.#position = restored.lsn;
    this.#partial = restored.partial;
    this.#wanted = wanted;
  }

  /** Decodes one frame; items go to `out`. Returns whether the server asked for a status update now. */
  decode(frame: Buffer, out: StreamItem[]): boolean {
    const message = decodeReplicationMessage(frame);
    if (message.kind === 'keepalive') {
      if (!this.#inTransaction && message.walEnd > this.#position) out.push({ kind: 'position', lsn: message.walEnd });
      return message.replyRequested;
    }
    const decoded = decodePgoutput(message.data);
    switch (decoded.tag) {
      case 'begin':
        this.#inTransaction = true;
        this.#commitLsn = formatLsn(decoded.finalLsn);
        this.#commitTime = postgresTimeToMillis(decoded.commitTime);
        this.#xid = decoded.xid;
        // Its commit record starts before the restored position: the checkpoint holds all of it.
        this.#skipTransaction = decoded.finalLsn < this.#position;
        this.#skipChanges = this.#partial !== undefined && this.#partial.commitLsn === decoded.finalLsn ? this.#partial.emitted : 0;
        return false;
      case 'commit':
        this.#inTransaction = false;
        this.#partial = undefined;
        if (!this.#skipTransaction) {
          out.push({ kind: 'commit', endLsn: decoded.endLsn });
          this.#position = decoded.endLsn;
        }
        return false;
      case 'relation':
        this.#relations.set(decoded.relationId, {
          schema: decoded.schema,
          table: decoded.table,
          columns: decoded.columns,
          wanted: this.#wanted === undefined || this.#wanted(decoded.schema, decoded.table),
        });
        return false;
      case 'insert':
      case 'update':
      case 'delete': {
        const relation = this.#relation(decoded.relationId);
        if (!relation.wanted || this.#skip()) return false;
        const record: PostgresChangeRecord = {
          op: decoded.tag,
          schema: relation.schema,
          table: relation.table,
          lsn: formatLsn(message.walStart),
          commitLsn: this.#commitLsn,
          commitTime: this.#commitTime,
          xid: this.#xid,
        };
        if (decoded.tag !== 'insert' && decoded.before !== undefined) record.before = toRow(relation.columns, decoded.before, decoded.beforeIsKey === true);
        if (decoded.tag !== 'delete') record.after = toRow(relation.columns, decoded.after, false);
        out.push({ kind: 'change', record });
        return false;
      }
      case 'truncate':
        for (const relationId of decoded.relationIds) {
          const relation = this.#relation(relationId);
          if (!relation.wanted || this.#skip()) continue;
          out.push({
            kind: 'change',
            record: {
              op: 'truncate',
              schema: relation.schema,
              table: relation.table,
              lsn: formatLsn(message.walStart),
              commitLsn: this.#commitLsn,
              commitTime: this.#commitTime,
              xid: this.#xid,
            },
          });
        }
        return false;
      default:
        return false; // origin, type and logical messages carry no change
    }
  }

  /** Whether the current change is one the restored checkpoint holds already. */
  #skip(): boolean {
    if (this.#skipTransaction) {
      this.skipped++;
      return true;
    }
    if (this.#skipChanges > 0) {
      this.#skipChanges--;
      this.skipped++;
      return true;
    }
    return false;
  }

  #relation(relationId: number): Relation {
    const relation = this.#relations.get(relationId);
    if (relation === undefined) throw new Error(`pgoutput: a change of relation ${relationId} before its Relation message`);
    return relation;
  }
}

/** A tuple as a row; a key tuple ('K') holds only the key columns. */
function toRow(columns: PgoutputColumn[], values: PgoutputValue[], keyOnly: boolean): PostgresSourceRow {
  const row: PostgresSourceRow = {};
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i] as PgoutputColumn;
    if (keyOnly && !column.key) continue;
    const value = values[i];
    if (value === UNCHANGED_TOAST || value === undefined) continue;
    row[column.name] = typedValue(value, column.typeOid);
  }
  return row;
}
