/**
 * The writer and the audit of the PostgreSQL source's exactly-once test (test/fixtures/jobs/postgres-cdc-job.ts):
 * the writer inserts, updates and deletes rows of cdc_items (one change or several per transaction,
 * some transactions rolled back), each change giving its id a new version, and remembers every
 * committed change in order; the audit reads cdc_log and cdc_mirror back and compares.
 */
import pg from 'pg';
import type { PostgresTestServer } from './postgres-server.ts';

export interface CdcChange {
  op: 'snapshot' | 'insert' | 'update' | 'delete';
  version: number;
}

/** Each key's committed changes, in commit order ("cdc_items:<id>" -> changes). */
export type CdcExpected = Map<string, CdcChange[]>;

/** A small deterministic random generator (mulberry32), so a failing run can be repeated. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class CdcWriter {
  readonly expected: CdcExpected = new Map();
  readonly #rows = new Map<number, number>(); // id -> version of the rows that exist
  #version = 0;
  readonly #random: () => number;
  readonly #ids: number;

  constructor(seed: number, ids = 40) {
    this.#random = seededRandom(seed);
    this.#ids = ids;
  }

  /** Rows that exist before the job starts: its snapshot. */
  async seed(server: PostgresTestServer, rows: number): Promise<void> {
    for (let id = 0; id < rows; id++) {
      const version = ++this.#version;
      await server.query('INSERT INTO cdc_items (id, version, amount, tags) VALUES ($1, $2, $3, $4)', [
        id,
        version,
        `${version}.25`,
        JSON.stringify({ v: version }),
      ]);
      this.#rows.set(id, version);
      this.#expect(id, { op: 'snapshot', version });
    }
  }

  /** `transactions` transactions, `perSecond` a second at most; every tenth rolled back. */
  async write(connectionString: string, transactions: number, perSecond: number): Promise<void> {
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      for (let t = 0; t < transactions; t++) {
        const started = Date.now();
        const size = this.#random() < 0.3 ? 2 + Math.floor(this.#random() * 4) : 1;
        const rollback = t % 10 === 9;
        await client.query('BEGIN');
        const rows = new Map(this.#rows);
        const changes: [number, CdcChange][] = [];
        let version = this.#version;
        for (let c = 0; c < size; c++) {
          const id = Math.floor(this.#random() * this.#ids);
          const next = ++version;
          if (!rows.has(id)) {
            await client.query('INSERT INTO cdc_items (id, version, amount, tags) VALUES ($1, $2, $3, $4)', [
              id,
              next,
              `${next}.5`,
              JSON.stringify({ v: next }),
            ]);
            rows.set(id, next);
            changes.push([id, { op: 'insert', version: next }]);
          } else if (this.#random() < 0.7) {
            await client.query('UPDATE cdc_items SET version = $2, amount = $3 WHERE id = $1', [id, next, `${next}.75`]);
            rows.set(id, next);
            changes.push([id, { op: 'update', version: next }]);
          } else {
            await client.query('DELETE FROM cdc_items WHERE id = $1', [id]);
            // A delete's record carries the old row: its version is the row's last.
            changes.push([id, { op: 'delete', version: rows.get(id) as number }]);
            rows.delete(id);
          }
        }
        if (rollback) {
          await client.query('ROLLBACK');
          continue;
        }
        await client.query('COMMIT');
        this.#version = version;
        this.#rows.clear();
        for (const [id, v] of rows) this.#rows.set(id, v);
        for (const [id, change] of changes) this.#expect(id, change);
        const wait = 1000 / perSecond - (Date.now() - started);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
    } finally {
      await client.end().catch(() => {});
    }
  }

  get changeCount(): number {
    let count = 0;
    for (const changes of this.expected.values()) count += changes.length;
    return count;
  }

  #expect(id: number, change: CdcChange): void {
    const key = `cdc_items:${id}`;
    const list = this.expected.get(key);
    if (list === undefined) this.expected.set(key, [change]);
    else list.push(change);
  }
}

export interface CdcAudit {
  rows: number;
  /** Keys whose logged changes (by n) differ from the committed ones: the first difference of each. */
  wrongKeys: string[];
  /** Logged rows beyond one per (key, n). */
  duplicates: number;
  /** Committed changes with no logged row. */
  missing: number;
  /** Ids whose mirror row (not deleted) differs from cdc_items, or is missing or extra. */
  wrongMirror: string[];
}

export async function auditCdc(server: PostgresTestServer, expected: CdcExpected): Promise<CdcAudit> {
  const logged = await server.query<{ key: string; n: number; op: string; version: string }>('SELECT key, n, op, version FROM cdc_log ORDER BY key, n');
  const byKey = new Map<string, { n: number; op: string; version: number }[]>();
  for (const row of logged) {
    const list = byKey.get(row.key) ?? [];
    list.push({ n: row.n, op: row.op, version: Number(row.version) });
    byKey.set(row.key, list);
  }
  let duplicates = 0;
  let missing = 0;
  const wrongKeys: string[] = [];
  for (const key of new Set([...expected.keys(), ...byKey.keys()])) {
    const want = expected.get(key) ?? [];
    const got = byKey.get(key) ?? [];
    const seen = new Set<number>();
    for (const row of got) {
      if (seen.has(row.n)) duplicates++;
      seen.add(row.n);
    }
    const gotVersions = new Set(got.map((row) => `${row.op}:${row.version}`));
    for (const change of want) if (!gotVersions.has(`${change.op}:${change.version}`)) missing++;
    for (let i = 0; i < Math.max(want.length, got.length); i++) {
      const w = want[i];
      const g = got[i];
      if (w === undefined || g === undefined || g.n !== i + 1 || g.op !== w.op || g.version !== w.version) {
        wrongKeys.push(
          `${key} #${i + 1}: logged ${g === undefined ? 'nothing' : `n=${g.n} ${g.op} v${g.version}`}, committed ${w === undefined ? 'nothing' : `${w.op} v${w.version}`}`,
        );
        break;
      }
    }
  }
  const table = await server.query<{ id: number; version: string; amount: string }>('SELECT id, version, amount::text AS amount FROM cdc_items ORDER BY id');
  const mirror = await server.query<{ id: number; version: string; amount: string }>(
    'SELECT id, version, amount::text AS amount FROM cdc_mirror WHERE NOT deleted ORDER BY id',
  );
  const wrongMirror: string[] = [];
  const mirrored = new Map(mirror.map((row) => [row.id, `${row.version}/${row.amount}`]));
  for (const row of table) {
    const got = mirrored.get(row.id);
    if (got !== `${row.version}/${row.amount}`) wrongMirror.push(`id ${row.id}: table ${row.version}/${row.amount}, mirror ${got ?? 'none'}`);
    mirrored.delete(row.id);
  }
  for (const [id, got] of mirrored) wrongMirror.push(`id ${id}: not in the table, mirror ${got}`);
  return { rows: logged.length, wrongKeys, duplicates, missing, wrongMirror };
}

/** Empty CDC tables and publication, no slot of the test job, nothing prepared (an earlier test's prepared transactions would hold locks). */
export async function freshCdcTables(server: PostgresTestServer, tables: readonly string[]): Promise<void> {
  for (const { gid } of await server.query<{ gid: string }>('SELECT gid FROM pg_prepared_xacts')) await server.query(`ROLLBACK PREPARED '${gid}'`);
  await server.query("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name LIKE 'cdc_slot%' AND NOT active");
  await server.query('DROP PUBLICATION IF EXISTS cdc_pub');
  await server.query('DROP TABLE IF EXISTS cdc_items, cdc_log, cdc_mirror');
  for (const statement of tables) await server.query(statement);
}
