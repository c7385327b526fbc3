/**
 * A cluster savepoint of a job with a two-phase-commit sink (the file sink), on the real broker:
 * `weir stop --cluster` takes it while input flows, and the member owning every task dies right
 * after one of its sink tasks committed its part in Kafka, before its sink committed the part's
 * files (WEIR_FAULT=savepoint-sink-commit:1); a new member takes its tasks and the stop completes.
 * That task is halted by the stop, so no owner of it commits them: the savepoint holds them. ONE process (`weir run --from-savepoint`, no --cluster) goes on
 * from it into the same folder: it commits what the savepoint holds (the savepoint is not marked
 * committed, as its sinks commit after its parts), and the committed files hold every input once,
 * every running total right.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { weir } from '../../harness/cli.ts';
import { clusterBrokersEnv, producePayments, startJobProcess, stopMember, withMemberLogs } from '../../harness/cluster-job.ts';
import { auditTotals, committedFileTotals } from '../../harness/cluster-sink-audit.ts';
import { cleanUpAfter, clusterTest, payment, steadyInput } from '../../harness/cluster-test.ts';
import { until } from '../../harness/weir-run.ts';

const module = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'cluster-2pc-job.ts');

test('a stop-with-savepoint of a cluster whose sink task died before its sink commit, then one process from it: exact', { timeout: 300_000 }, async () => {
  const { cluster, topics, storage, members, member } = await clusterTest('2pc-savepoint');
  const output = await mkdtemp(join(tmpdir(), 'weir-cluster-2pc-savepoint-'));
  cleanUpAfter(() => rm(output, { recursive: true, force: true }));
  const processStorage = await mkdtemp(join(tmpdir(), 'weir-cluster-2pc-savepoint-one-'));
  cleanUpAfter(() => rm(processStorage, { recursive: true, force: true }));
  // maxParallelism 12, the input's partition count (cluster mode refuses fewer: a savepoint's operators are at most maxParallelism subtasks).
  const env = { CJ_SINK: 'file', CJ_FILE_OUT: output, CJ_MAX_PARALLELISM: '12' };
  await withMemberLogs(members, async () => {
    const first = Array.from({ length: 400 }, (_, seq) => payment(seq));
    await producePayments(topics.input, first);
    // One member owns every task, so its first sink task to commit its part is the one that dies.
    const dying = member({ module, env: { ...env, WEIR_FAULT: 'savepoint-sink-commit:1' } });
    await until('output', async () => (committedFileTotals(output).length >= first.length ? true : undefined), 120_000);
    const input = steadyInput(topics.input, (seq) => payment(first.length + seq));
    await sleep(1500);
    const stopping = weir(['stop', '--cluster', cluster, '--checkpoint-storage', storage, '--timeout', '120s'], clusterBrokersEnv());
    await dying.waitFor(/WEIR_FAULT savepoint-sink-commit:1: killing the process at savepoint-sink-commit of checkpoint 1 \(totals task \d+\)/, 120_000);
    await dying.exited;
    // A new member takes the dead one's tasks: those that committed their part stay halted, the others take theirs.
    member({ module, env });
    const stop = await stopping;
    assert.equal(stop.code, 0, `weir stop --cluster failed:\n${stop.stderr}`);
    const [, , path] = /stopped cluster "[^"]+" with savepoint (\d+): (\S+)/.exec(stop.stdout) ?? [];
    assert.ok(path !== undefined, `it prints the savepoint: ${stop.stdout}`);
    for (const run of members) await stopMember(run);

    const one = startJobProcess({ storage: processStorage, topics, interval: '500ms', module, env, args: ['--from-savepoint', path as string] });
    members.push(one);
    cleanUpAfter(() => stopMember(one));
    await one.waitFor(/restor|started|running/i, 60_000);
    await sleep(3000);
    const inputs = [...first, ...(await input.stop())];
    await until('every input in the output', async () => (committedFileTotals(output).length >= inputs.length ? true : undefined), 120_000).catch(() => {});
    await sleep(2000);
    auditTotals(inputs, committedFileTotals(output));
  });
});
