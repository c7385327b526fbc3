/**
 * A source that feeds several branches, in cluster mode (issue 35: `stage "input" is more than one
 * chain` was refused): the cluster job's source feeds a pass-through map into a sink of its own
 * beside its two keyed branches. The map is a stage of its own behind a forward exchange (source
 * task N writes partition N, which map task N reads), as subtask N feeds subtask N in one process.
 * Two members while input flows; one is SIGKILLed and started again. Read back read_committed:
 * the pass-through output holds every input exactly once, and the totals and windows are exact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Payment } from '../../fixtures/jobs/cluster-job.ts';
import { auditClusterOutputs, BASE_TS, closers, producePayments, readJson, totalsAtLeast, withMemberLogs } from '../../harness/cluster-job.ts';
import { cleanUpAfter, clusterTest, payment } from '../../harness/cluster-test.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

test('a source feeding a pass-through branch beside two keyed ones runs in cluster mode (a forward exchange); a member SIGKILLed; every output exact', {
  timeout: 600_000,
}, async () => {
  const scaffold = await clusterTest('branching');
  const { topics, members } = scaffold;
  const pass = await createTestTopic(testBrokers(), 'cluster-pass', 3);
  cleanUpAfter(pass.remove);
  const env = { CJ_PASS: pass.topic };
  const all = Array.from({ length: 6000 }, (_, seq) => payment(seq));
  await withMemberLogs(members, async () => {
    await producePayments(topics.input, all.slice(0, 2000));
    const a = scaffold.member({ env });
    await a.waitFor(/stage "pass", 12 tasks/, 120_000);
    const b = scaffold.member({ env });
    await totalsAtLeast(topics, 1000);
    b.child.kill('SIGKILL');
    await b.exited;
    await producePayments(topics.input, all.slice(2000, 4000));
    scaffold.member({ env });
    await producePayments(topics.input, all.slice(4000));
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
    const expected = [...all, ...last].length;
    const passed = await until(
      `${expected} records through the pass-through branch`,
      async () => {
        const records = await readJson<Payment>(pass.topic);
        return records.length >= expected ? records : undefined;
      },
      120_000,
    );
    const seen = new Map<number, number>();
    for (const record of passed) seen.set(record.seq, (seen.get(record.seq) ?? 0) + 1);
    const twice = [...seen].filter(([, count]) => count > 1).map(([seq]) => seq);
    const missing = [...all, ...last].filter((record) => !seen.has(record.seq)).map((record) => record.seq);
    assert.deepEqual({ records: passed.length, twice: twice.slice(0, 10), missing: missing.slice(0, 10) }, { records: expected, twice: [], missing: [] });
  });
});
