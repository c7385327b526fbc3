/**
 * The decoder of `pgoutput`, PostgreSQL's built-in logical decoding output plugin, protocol
 * version 1 (PostgreSQL 10+; https://www.postgresql.org/docs/current/protocol-logicalrep-message-formats.html):
 * the payload of one XLogData message into one message object. Column values stay as the text
 * PostgreSQL sent (pgoutput's text format); typing them by the relation's type OIDs is
 * pgoutput-values.ts. Streamed in-progress transactions (protocol 2) and two-phase decoding
 * (protocol 3) are not asked for by the reader, so their messages are refused here.
 */
import type { Lsn } from './lsn.ts';

/** The pgoutput protocol version this decoder reads (the reader asks for it in START_REPLICATION). */
export const PGOUTPUT_PROTOCOL_VERSION = 1;

export interface PgoutputColumn {
  /** Part of the replica identity (the key). */
  key: boolean;
  name: string;
  typeOid: number;
  typeModifier: number;
}

/** A column value of a tuple: its text, null, or a TOASTed value the change left unchanged (not sent). */
export type PgoutputValue = string | null | typeof UNCHANGED_TOAST;
export const UNCHANGED_TOAST: unique symbol = Symbol('unchanged toast');

export type PgoutputMessage =
  | { tag: 'begin'; finalLsn: Lsn; commitTime: bigint; xid: number }
  | { tag: 'commit'; flags: number; commitLsn: Lsn; endLsn: Lsn; commitTime: bigint }
  | { tag: 'origin'; commitLsn: Lsn; name: string }
  | { tag: 'relation'; relationId: number; schema: string; table: string; replicaIdentity: string; columns: PgoutputColumn[] }
  | { tag: 'type'; typeOid: number; schema: string; name: string }
  | { tag: 'insert'; relationId: number; after: PgoutputValue[] }
  | { tag: 'update'; relationId: number; before?: PgoutputValue[]; beforeIsKey?: boolean; after: PgoutputValue[] }
  | { tag: 'delete'; relationId: number; before: PgoutputValue[]; beforeIsKey: boolean }
  | { tag: 'truncate'; options: number; relationIds: number[] }
  | { tag: 'message'; flags: number; lsn: Lsn; prefix: string; content: Buffer };

/** Reads one pgoutput message; throws naming the message when it is malformed or not of protocol 1. */
export function decodePgoutput(data: Buffer): PgoutputMessage {
  const reader = new MessageReader(data);
  const tag = String.fromCharCode(reader.byte());
  switch (tag) {
    case 'B':
      return { tag: 'begin', finalLsn: reader.int64(), commitTime: reader.int64(), xid: reader.uint32() };
    case 'C':
      return { tag: 'commit', flags: reader.byte(), commitLsn: reader.int64(), endLsn: reader.int64(), commitTime: reader.int64() };
    case 'O':
      return { tag: 'origin', commitLsn: reader.int64(), name: reader.string() };
    case 'R': {
      const relationId = reader.uint32();
      const schema = reader.string();
      const table = reader.string();
      const replicaIdentity = String.fromCharCode(reader.byte());
      const count = reader.int16();
      const columns: PgoutputColumn[] = [];
      for (let i = 0; i < count; i++) {
        const flags = reader.byte();
        columns.push({ key: (flags & 1) === 1, name: reader.string(), typeOid: reader.uint32(), typeModifier: reader.int32() });
      }
      return { tag: 'relation', relationId, schema, table, replicaIdentity, columns };
    }
    case 'Y':
      return { tag: 'type', typeOid: reader.uint32(), schema: reader.string(), name: reader.string() };
    case 'I': {
      const relationId = reader.uint32();
      reader.expect('N', 'insert');
      return { tag: 'insert', relationId, after: reader.tuple() };
    }
    case 'U': {
      const relationId = reader.uint32();
      const kind = String.fromCharCode(reader.byte());
      if (kind === 'N') return { tag: 'update', relationId, after: reader.tuple() };
      if (kind !== 'K' && kind !== 'O') throw new Error(`pgoutput update: unexpected tuple kind "${kind}"`);
      const before = reader.tuple();
      reader.expect('N', 'update');
      return { tag: 'update', relationId, before, beforeIsKey: kind === 'K', after: reader.tuple() };
    }
    case 'D': {
      const relationId = reader.uint32();
      const kind = String.fromCharCode(reader.byte());
      if (kind !== 'K' && kind !== 'O') throw new Error(`pgoutput delete: unexpected tuple kind "${kind}"`);
      return { tag: 'delete', relationId, before: reader.tuple(), beforeIsKey: kind === 'K' };
    }
    case 'T': {
      const count = reader.uint32();
      const options = reader.byte();
      const relationIds: number[] = [];
      for (let i = 0; i < count; i++) relationIds.push(reader.uint32());
      return { tag: 'truncate', options, relationIds };
    }
    case 'M': {
      const flags = reader.byte();
      const lsn = reader.int64();
      const prefix = reader.string();
      const length = reader.uint32();
      return { tag: 'message', flags, lsn, prefix, content: reader.bytes(length) };
    }
    default:
      throw new Error(`pgoutput message "${tag}" (0x${(data[0] ?? 0).toString(16)}) is not one of protocol version ${PGOUTPUT_PROTOCOL_VERSION}`);
  }
}

class MessageReader {
  readonly #data: Buffer;
  #offset = 0;

  constructor(data: Buffer) {
    this.#data = data;
  }

  #need(bytes: number): void {
    if (this.#offset + bytes > this.#data.length)
      throw new Error(
        `pgoutput message "${String.fromCharCode(this.#data[0] ?? 0)}" ends early (${this.#data.length} bytes, at ${this.#offset} needing ${bytes} more)`,
      );
  }

  byte(): number {
    this.#need(1);
    return this.#data.readUInt8(this.#offset++);
  }

  int16(): number {
    this.#need(2);
    const value = this.#data.readInt16BE(this.#offset);
    this.#offset += 2;
    return value;
  }

  int32(): number {
    this.#need(4);
    const value = this.#data.readInt32BE(this.#offset);
    this.#offset += 4;
    return value;
  }

  uint32(): number {
    this.#need(4);
    const value = this.#data.readUInt32BE(this.#offset);
    this.#offset += 4;
    return value;
  }

  int64(): bigint {
    this.#need(8);
    const value = this.#data.readBigInt64BE(this.#offset);
    this.#offset += 8;
    return value;
  }

  bytes(length: number): Buffer {
    this.#need(length);
    const value = this.#data.subarray(this.#offset, this.#offset + length);
    this.#offset += length;
    return value;
  }

  /** A NUL-terminated UTF-8 string. */
  string(): string {
    const end = this.#data.indexOf(0, this.#offset);
    if (end < 0) throw new Error(`pgoutput message "${String.fromCharCode(this.#data[0] ?? 0)}": a string without its NUL terminator`);
    const value = this.#data.toString('utf8', this.#offset, end);
    this.#offset = end + 1;
    return value;
  }

  expect(kind: string, what: string): void {
    const got = String.fromCharCode(this.byte());
    if (got !== kind) throw new Error(`pgoutput ${what}: expected tuple kind "${kind}", got "${got}"`);
  }

  /** TupleData: a column count, then per column 'n' (null), 'u' (unchanged TOAST), 't' (text) or 'b' (binary) with a length. */
  tuple(): PgoutputValue[] {
    const count = this.int16();
    const values: PgoutputValue[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const kind = this.byte();
      if (kind === 0x6e) values[i] = null;
      else if (kind === 0x75) values[i] = UNCHANGED_TOAST;
      else if (kind === 0x74) values[i] = this.bytes(this.uint32()).toString('utf8');
      else if (kind === 0x62) throw new Error('pgoutput: a binary column value (the reader asks for text values: binary is not requested)');
      else throw new Error(`pgoutput: unknown column value kind 0x${kind.toString(16)}`);
    }
    return values;
  }
}
