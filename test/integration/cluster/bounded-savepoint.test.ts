/**
 * Issue 35: a savepoint of a cluster some of whose tasks have ended (bounded input), on the real
 * broker (Flink's FLIP-147). An ended task runs no more: its final checkpoint is its part, and the
 * tasks behind it count its end frame as its barrier; a task whose every input channel ended takes
 * its part at its next checkpoint, as a source task does. `weir stop --cluster` takes the savepoint
 * while the source tasks have ended and the slow lookups still run, the members leave, and one
 * process goes on from the savepoint to the end of the input: the cluster's outputs and the
 * process's, read back read_committed, are exact (every payment once, every running total and
 * window as one process alone would write them).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { exitsOnItsOwn, latestTaskRecords } from '../../harness/bounded-cluster.ts';
import { weir } from '../../harness/cli.ts';
import { auditClusterOutputs, clusterBrokersEnv, producePayments, startJobProcess, withMemberLogs } from '../../harness/cluster-job.ts';
import { cleanUpAfter, clusterTest, payment } from '../../harness/cluster-test.ts';
import { until } from '../../harness/weir-run.ts';

const boundedJob = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'bounded-cluster-job.ts');

test('a stop of a cluster whose source tasks ended takes their final checkpoints as their parts; one process goes on from it, exact', {
  timeout: 300_000,
}, async () => {
  const { cluster, topics, members, member } = await clusterTest('bounded-savepoint');
  const inputs = Array.from({ length: 6000 }, (_, seq) => payment(seq));
  await producePayments(topics.input, inputs);
  // A slow lookup (2 in flight, 25 ms each: about 6 s per task): the source tasks end long before the others.
  const env = { CJ_LOOKUP_MS: '25', CJ_LOOKUP_CAPACITY: '2' };
  const runs = [member({ module: boundedJob, interval: '300ms', env }), member({ module: boundedJob, interval: '300ms', env })];
  const processStorage = await mkdtemp(join(tmpdir(), 'weir-bounded-savepoint-one-'));
  cleanUpAfter(() => rm(processStorage, { recursive: true, force: true }));
  await withMemberLogs(members, async () => {
    const endedTask = /payments task \d+ ended: its final checkpoint/;
    await until('a source task ended', async () => (runs.some((run) => endedTask.test(run.stderr())) ? true : undefined), 120_000);
    const records = await latestTaskRecords(cluster);
    const ended = [...records.entries()].filter(([, record]) => record.ended === true).map(([name]) => name);
    assert.ok(ended.length > 0, 'a task ended before the stop');
    assert.ok(
      [...records.entries()].some(([name, record]) => name.startsWith('lookup/') && record.ended !== true),
      'lookup tasks behind the ended ones still run',
    );

    const stop = await weir(['stop', '--cluster', cluster, '--timeout', '4m'], clusterBrokersEnv());
    assert.equal(stop.code, 0, `weir stop --cluster failed:\n${stop.stderr}`);
    assert.match(stop.stderr + stop.stdout, /\d+ of them ended \(bounded input\): their final checkpoints are their parts/);
    const [, , path] = /stopped cluster "[^"]+" with savepoint (\d+): (\S+)/.exec(stop.stdout) ?? [];
    assert.ok(path !== undefined, `it prints the savepoint: ${stop.stdout}`);
    for (const run of runs) assert.equal(await exitsOnItsOwn(run, 60_000), 0, 'the member leaves once the savepoint is done');
    // Which way each lookup task's part came depends on timing: at its next checkpoint (its one
    // channel had ended, no barrier comes), or its final checkpoint (it ended first); either is exact.

    const metadata = JSON.parse(await readFile(join(path, '_metadata'), 'utf8')) as {
      operators: { uid: string; parallelism: number; subtasks: { subtaskIndex: number; operator?: { path: string } }[] }[];
    };
    const payments = metadata.operators.find((operator) => operator.uid === 'payments');
    assert.equal(payments?.subtasks.length, payments?.parallelism, 'every source task, ended or not, has its splits in the savepoint');
    assert.ok(
      payments?.subtasks.some((subtask) => subtask.operator?.path.startsWith('parts/ended-') === true),
      'an ended task’s final checkpoint was copied in as its part',
    );

    // One process goes on from the savepoint to the end of the bounded input (its lookups at their usual speed), then finishes.
    const one = startJobProcess({ module: boundedJob, storage: processStorage, topics, interval: '300ms', args: ['--from-savepoint', path] });
    members.push(one);
    assert.equal(await exitsOnItsOwn(one, 180_000), 0, 'the process finishes the bounded job');
    await auditClusterOutputs(topics, inputs, inputs);
  });
});
