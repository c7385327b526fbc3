/** Hand-built pgoutput and replication-protocol messages for the decoder's unit tests (the byte layouts of PostgreSQL's docs). */
export class Bytes {
  readonly #parts: Buffer[] = [];

  char(text: string): this {
    this.#parts.push(Buffer.from(text, 'latin1'));
    return this;
  }
  int8(value: number): this {
    this.#parts.push(Buffer.from([value]));
    return this;
  }
  int16(value: number): this {
    const buffer = Buffer.alloc(2);
    buffer.writeInt16BE(value);
    this.#parts.push(buffer);
    return this;
  }
  int32(value: number): this {
    const buffer = Buffer.alloc(4);
    buffer.writeInt32BE(value);
    this.#parts.push(buffer);
    return this;
  }
  uint32(value: number): this {
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32BE(value);
    this.#parts.push(buffer);
    return this;
  }
  int64(value: bigint): this {
    const buffer = Buffer.alloc(8);
    buffer.writeBigInt64BE(value);
    this.#parts.push(buffer);
    return this;
  }
  string(text: string): this {
    this.#parts.push(Buffer.from(text, 'utf8'), Buffer.from([0]));
    return this;
  }
  /** TupleData: null, 'u' (unchanged TOAST) or a text value per column. */
  tuple(values: (string | null | 'u')[]): this {
    this.int16(values.length);
    for (const value of values) {
      if (value === null) this.char('n');
      else if (value === 'u') this.char('u');
      else {
        const bytes = Buffer.from(value, 'utf8');
        this.char('t').uint32(bytes.length);
        this.#parts.push(bytes);
      }
    }
    return this;
  }
  done(): Buffer {
    return Buffer.concat(this.#parts);
  }
}

/** An XLogData frame around a pgoutput message. */
export function xlogData(walStart: bigint, message: Buffer): Buffer {
  return Buffer.concat([new Bytes().char('w').int64(walStart).int64(walStart).int64(0n).done(), message]);
}

export function keepalive(walEnd: bigint, replyRequested: boolean): Buffer {
  return new Bytes()
    .char('k')
    .int64(walEnd)
    .int64(0n)
    .int8(replyRequested ? 1 : 0)
    .done();
}

export const begin = (finalLsn: bigint, xid: number, commitMicros = 0n) => new Bytes().char('B').int64(finalLsn).int64(commitMicros).uint32(xid).done();
export const commit = (commitLsn: bigint, endLsn: bigint) => new Bytes().char('C').int8(0).int64(commitLsn).int64(endLsn).int64(0n).done();

/** A Relation message: columns [name, type oid, key]. */
export function relation(id: number, schema: string, table: string, columns: [string, number, boolean][], identity = 'd'): Buffer {
  const bytes = new Bytes().char('R').uint32(id).string(schema).string(table).char(identity).int16(columns.length);
  for (const [name, oid, key] of columns)
    bytes
      .int8(key ? 1 : 0)
      .string(name)
      .uint32(oid)
      .int32(-1);
  return bytes.done();
}

export const insert = (id: number, values: (string | null | 'u')[]) => new Bytes().char('I').uint32(id).char('N').tuple(values).done();
