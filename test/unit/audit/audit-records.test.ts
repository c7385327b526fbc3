import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AuditSpec, auditRecords, RecordAudit } from '../../../src/audit/audit-records.ts';

interface Output {
  seq: number;
  key: string;
  count: number;
}

/** Outputs of a keyed running count over inputs 0..n-1 with key `k<seq % keys>`, as an exact job writes them. */
function exactOutputs(n: number, keys: number): Output[] {
  const counts = new Map<string, number>();
  return Array.from({ length: n }, (_, seq) => {
    const key = `k${seq % keys}`;
    const count = (counts.get(key) ?? 0) + 1;
    counts.set(key, count);
    return { seq, key, count };
  });
}

function countSpec(n: number, keys: number): AuditSpec<Output, number> {
  const expectedFinal = new Map<string, number>();
  for (let seq = 0; seq < n; seq++) expectedFinal.set(`k${seq % keys}`, (expectedFinal.get(`k${seq % keys}`) ?? 0) + 1);
  return {
    idOf: (output) => output.seq,
    expected: { kind: 'sequence', count: n },
    fromAborted: (seq) => seq >= 1000,
    running: { keyOf: (output) => output.key, valueOf: (output) => output.count, deltaOf: () => 1, expectedFinal },
  };
}

test('an exact output passes', () => {
  const report = auditRecords(exactOutputs(100, 7), countSpec(100, 7));
  assert.equal(report.ok, true);
  assert.equal(report.records, 100);
  assert.deepEqual(report.duplicates, { ids: 0, copies: 0, sample: [] });
  assert.deepEqual(report.missing, { ids: 0, sample: [] });
  assert.deepEqual(report.unexpected, { records: 0, ids: 0, sample: [] });
  assert.deepEqual(report.fromAborted, { records: 0, ids: 0, sample: [] });
  assert.deepEqual(report.wrong, { records: 0, ids: 0, sample: [] });
  assert.deepEqual(report.wrongKeys, []);
});

test('duplicates: how many ids, how many extra copies, a sample of ids with their times in the order met', () => {
  const outputs = exactOutputs(20, 20); // one output per key: the duplicates themselves break no running count below
  const report = auditRecords([...outputs, outputs[7], outputs[3], outputs[7], outputs[3], outputs[12]] as Output[], {
    ...countSpec(20, 20),
    running: undefined,
  });
  assert.equal(report.ok, false);
  assert.deepEqual(report.duplicates, {
    ids: 3,
    copies: 5,
    sample: [
      { id: 3, times: 3 },
      { id: 7, times: 3 },
      { id: 12, times: 2 },
    ],
  });
  assert.equal(report.records, 25);
  const sampled = auditRecords([...outputs, outputs[7], outputs[3], outputs[12]] as Output[], { ...countSpec(20, 20), running: undefined, sampleSize: 2 });
  assert.deepEqual(sampled.duplicates, {
    ids: 3,
    copies: 3,
    sample: [
      { id: 3, times: 2 },
      { id: 7, times: 2 },
    ],
  });
});

test('missing: the expected ids not seen, in id order, sampled', () => {
  const outputs = exactOutputs(50, 1).filter((output) => output.seq % 10 !== 4);
  const report = auditRecords(outputs, { idOf: (output) => output.seq, expected: { kind: 'sequence', count: 50 }, sampleSize: 3 });
  assert.equal(report.ok, false);
  assert.deepEqual(report.missing, { ids: 5, sample: [4, 14, 24] });
  const set = auditRecords([{ id: 'a' }, { id: 'c' }], { idOf: (record) => record.id, expected: { kind: 'set', ids: new Set(['a', 'b', 'c', 'd']) } });
  assert.deepEqual(set.missing, { ids: 2, sample: ['b', 'd'] });
});

test('records from aborted input are counted apart from unexpected ones', () => {
  const outputs = [...exactOutputs(10, 1), { seq: 1000, key: 'x', count: 1 }, { seq: 1001, key: 'x', count: 2 }, { seq: 10, key: 'y', count: 1 }];
  const spec = countSpec(10, 1);
  const report = auditRecords(outputs, { ...spec, running: undefined });
  assert.equal(report.ok, false);
  assert.deepEqual(report.fromAborted, { records: 2, ids: 2, sample: [1000, 1001] });
  assert.deepEqual(report.unexpected, { records: 1, ids: 1, sample: [10] });
  assert.deepEqual(report.missing, { ids: 0, sample: [] });
});

test('running aggregates: a count off by one, a lost step, a wrong end and a key nobody expects are wrong keys', () => {
  const spec = countSpec(30, 3);
  const outputs = exactOutputs(30, 3);
  // k0: a count repeated (as when a record is counted twice in state but written once).
  (outputs[3] as Output).count = 1;
  // k1: its last output missing, so it ends short of its total.
  const shortened = outputs.filter((output) => output.seq !== 28);
  const report = auditRecords([...shortened, { seq: 28, key: 'k9', count: 1 }], spec);
  assert.equal(report.ok, false);
  assert.deepEqual(report.wrongKeys, [
    { key: 'k0', last: 10, expected: 10 },
    { key: 'k1', last: 9, expected: 10 },
    { key: 'k9', last: 1, expected: undefined },
  ]);
  assert.deepEqual(report.missing, { ids: 0, sample: [] }, 'seq 28 is there, under the wrong key');
});

test('running sums: each output the previous plus its delta, from 0, ending at the total', () => {
  const sums = [
    { seq: 0, key: 'a', amount: 5, sum: 5 },
    { seq: 1, key: 'a', amount: 2, sum: 7 },
    { seq: 2, key: 'b', amount: 4, sum: 4 },
  ];
  const spec: AuditSpec<(typeof sums)[number], number> = {
    idOf: (record) => record.seq,
    expected: { kind: 'sequence', count: 3 },
    running: {
      keyOf: (record) => record.key,
      valueOf: (record) => record.sum,
      deltaOf: (record) => record.amount,
      expectedFinal: new Map([
        ['a', 7],
        ['b', 4],
      ]),
    },
  };
  assert.equal(auditRecords(sums, spec).ok, true);
  const reordered = auditRecords([sums[1], sums[2], sums[0]] as typeof sums, spec);
  assert.equal(reordered.ok, true, 'outputs are taken in the order of their values, not the order read');
  const wrong = auditRecords([{ ...sums[0], sum: 6 } as (typeof sums)[number], sums[1], sums[2]] as typeof sums, spec);
  assert.deepEqual(wrong.wrongKeys, [{ key: 'a', last: 7, expected: 7 }]);
  const noOutput = auditRecords([sums[2]] as typeof sums, spec);
  assert.deepEqual(noOutput.wrongKeys, [{ key: 'a', last: 0, expected: 7 }]);
});

test('a per-record check runs on the records with expected ids', () => {
  const windows = [
    { window: 'w1', total: 3 },
    { window: 'w2', total: 9 },
    { window: 'w2', total: 8 },
    { window: 'w9', total: 1 },
  ];
  const want = new Map([
    ['w1', 3],
    ['w2', 8],
    ['w3', 5],
  ]);
  const report = auditRecords(windows, {
    idOf: (record) => record.window,
    expected: { kind: 'set', ids: new Set(want.keys()) },
    check: (record, id) => record.total === want.get(id),
  });
  assert.deepEqual(report.wrong, { records: 1, ids: 1, sample: ['w2'] });
  assert.deepEqual(report.unexpected, { records: 1, ids: 1, sample: ['w9'] }, 'an unexpected id is not checked');
  assert.deepEqual(report.missing, { ids: 1, sample: ['w3'] });
  assert.deepEqual(report.duplicates, { ids: 1, copies: 1, sample: [{ id: 'w2', times: 2 }] });
});

test('contiguous range: every integer from the smallest id to the largest, whatever the ends', () => {
  const ids = (list: (number | string)[]) => auditRecords(list, { idOf: (id) => id, expected: { kind: 'contiguous' } });
  assert.equal(ids([5, 6, 7, 8]).ok, true);
  assert.deepEqual(ids([12, 9, 15, 10]).missing, { ids: 3, sample: [11, 13, 14] });
  assert.deepEqual(ids(['3', '5', 4, '7']).missing, { ids: 1, sample: [6] }, 'integers as text count too');
  assert.deepEqual(ids([1, 'x', 3]).missing, { ids: 0, sample: [] }, 'no range when an id is not an integer');
  assert.deepEqual(ids([]).missing, { ids: 0, sample: [] });
  assert.deepEqual(ids([1, 2, 2, 4]).duplicates, { ids: 1, copies: 1, sample: [{ id: 2, times: 2 }] });
});

test('record by record gives the same report as all at once', () => {
  const outputs = [...exactOutputs(40, 4), { seq: 5, key: 'k1', count: 99 }];
  const audit = new RecordAudit(countSpec(40, 4));
  for (const output of outputs) audit.add(output);
  assert.deepEqual(audit.report(), auditRecords(outputs, countSpec(40, 4)));
});
