import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InsertStatements, lastRowPerKey, quoteTable } from '../../../../src/connectors/postgres/postgres-statements.ts';

test('append: multi-row INSERTs of at most batchSize rows, the full ones under one prepared name', () => {
  const statements = new InsertStatements('public.events', ['seq', 'key'], undefined, 2).statements([
    { seq: 1, key: 'a' },
    { seq: 2, key: 'b' },
    { seq: 3, key: 'a' },
  ]);
  assert.deepEqual(
    statements.map((statement) => [statement.name, statement.text, statement.values]),
    [
      ['weir_insert_2', 'INSERT INTO "public"."events" ("seq", "key") VALUES ($1, $2), ($3, $4)', [1, 'a', 2, 'b']],
      [undefined, 'INSERT INTO "public"."events" ("seq", "key") VALUES ($1, $2)', [3, 'a']],
    ],
  );
});

test('upsert: ON CONFLICT (key) DO UPDATE of the other columns, the last row of each key in a batch only', () => {
  const statements = new InsertStatements('totals', ['key', 'total'], ['key'], 500).statements([
    { key: 'a', total: 1 },
    { key: 'b', total: 2 },
    { key: 'a', total: 3 },
  ]);
  assert.equal(statements.length, 1);
  assert.equal(
    statements[0]?.text,
    'INSERT INTO "totals" ("key", "total") VALUES ($1, $2), ($3, $4) ON CONFLICT ("key") DO UPDATE SET "total" = EXCLUDED."total"',
  );
  assert.deepEqual(statements[0]?.values, ['b', 2, 'a', 3]);
});

test('upsert with every column a key column: DO NOTHING; a missing value is NULL', () => {
  const [statement] = new InsertStatements('seen', ['a', 'b'], ['a', 'b'], 10).statements([{ a: 1 }]);
  assert.equal(statement?.text, 'INSERT INTO "seen" ("a", "b") VALUES ($1, $2) ON CONFLICT ("a", "b") DO NOTHING');
  assert.deepEqual(statement?.values, [1, null]);
});

test("rows per statement stay within PostgreSQL's 65535 parameters", () => {
  const columns = Array.from({ length: 100 }, (_, i) => `c${i}`);
  assert.equal(new InsertStatements('wide', columns, undefined, 10_000).rowsPerStatement, 655);
});

test('names are quoted exactly; composite keys compare by value as PostgreSQL would receive them', () => {
  assert.equal(quoteTable('My"Table'), '"My""Table"');
  assert.deepEqual(
    lastRowPerKey(
      [
        { a: 1, b: 'x', v: 1 },
        { a: '1', b: 'x', v: 2 },
        { a: 1, b: 'y', v: 3 },
      ],
      ['a', 'b'],
    ).map((row) => row.v),
    [2, 3],
  );
});
