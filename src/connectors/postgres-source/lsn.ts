/**
 * PostgreSQL log sequence numbers (LSN): a 64-bit WAL position, written `X/Y` (two hex halves).
 * Kept as bigint in the reader; as the `X/Y` text in records and in the checkpoint.
 */
export type Lsn = bigint;

/** Parses `X/Y` (as pg_lsn prints it). */
export function parseLsn(text: string): Lsn {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (match === null) throw new Error(`"${text}" is not an LSN (X/Y in hex)`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/** Formats an LSN as `X/Y`, as PostgreSQL does (upper-case hex, no leading zeros). */
export function formatLsn(lsn: Lsn): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** Microseconds since 2000-01-01 (PostgreSQL's epoch) to milliseconds since 1970-01-01. */
export function postgresTimeToMillis(micros: bigint): number {
  return Number(micros / 1000n) + 946_684_800_000;
}

/** Milliseconds since 1970-01-01 to microseconds since 2000-01-01. */
export function millisToPostgresTime(millis: number): bigint {
  return BigInt(Math.round(millis) - 946_684_800_000) * 1000n;
}
