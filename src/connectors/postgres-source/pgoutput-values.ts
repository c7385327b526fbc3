/**
 * Column values typed by their type OID, the same for the snapshot (read as text on a normal
 * connection) and the change stream (pgoutput's text format). Both connections run with
 * TimeZone=UTC and DateStyle=ISO (POSTGRES_SOURCE_SESSION_OPTIONS), so the text is stable:
 *
 * - int2, int4, oid, float4, float8 -> number (NaN and Infinity as PostgreSQL spells them)
 * - int8 -> string (a bigint does not fit a JavaScript number; `BigInt(value)` when you need one),
 *   numeric -> string (exact)
 * - bool -> boolean; json, jsonb -> parsed; bytea -> Buffer
 * - timestamptz -> ISO 8601 text in UTC (`2026-12-05T20:56:27.123456Z`), timestamp -> ISO 8601
 *   text without a zone, date -> `YYYY-MM-DD` (text keeps PostgreSQL's microseconds, a Date would not)
 * - everything else (text, varchar, uuid, arrays, enums, ...) -> its text
 */
export const POSTGRES_SOURCE_SESSION_OPTIONS = '-c TimeZone=UTC -c DateStyle=ISO,YMD -c extra_float_digits=3 -c bytea_output=hex';

/** The OIDs typed here (pg_type.oid). */
export const TYPE_OID = {
  bool: 16,
  bytea: 17,
  int8: 20,
  int2: 21,
  int4: 23,
  oid: 26,
  json: 114,
  float4: 700,
  float8: 701,
  date: 1082,
  timestamp: 1114,
  timestamptz: 1184,
  numeric: 1700,
  jsonb: 3802,
} as const;

export type PostgresValue = string | number | boolean | null | Buffer | unknown;

/** The typed value of a column's text (null stays null). */
export function typedValue(text: string | null, typeOid: number): PostgresValue {
  if (text === null) return null;
  switch (typeOid) {
    case TYPE_OID.int2:
    case TYPE_OID.int4:
    case TYPE_OID.oid:
      return Number.parseInt(text, 10);
    case TYPE_OID.float4:
    case TYPE_OID.float8:
      return Number(text); // 'NaN', 'Infinity', '-Infinity' parse as such
    case TYPE_OID.bool:
      return text === 't';
    case TYPE_OID.json:
    case TYPE_OID.jsonb:
      return JSON.parse(text);
    case TYPE_OID.bytea:
      return text.startsWith('\\x') ? Buffer.from(text.slice(2), 'hex') : Buffer.from(text, 'binary');
    case TYPE_OID.timestamptz:
      return isoTimestamp(text, true);
    case TYPE_OID.timestamp:
      return isoTimestamp(text, false);
    default:
      return text; // int8, numeric, date, text and every other type: the text PostgreSQL wrote
  }
}

/** `2026-12-05 20:56:27.123456+00` -> `2026-12-05T20:56:27.123456Z` (`infinity` stays as it is). */
function isoTimestamp(text: string, withZone: boolean): string {
  if (!/^\d{4}-\d\d-\d\d \d/.test(text)) return text; // infinity, -infinity, BC dates
  const iso = text.replace(' ', 'T');
  if (!withZone) return iso;
  const zone = /([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?$/.exec(iso);
  if (zone === null) return iso;
  const offset = `${zone[1]}${zone[2]}:${zone[3] ?? '00'}`;
  const local = iso.slice(0, zone.index);
  return offset === '+00:00' || offset === '-00:00' ? `${local}Z` : `${local}${offset}`;
}
