/**
 * Cluster mode through a restart of its broker, on a broker of this test's own: two members share
 * the job while input flows; the broker is stopped (a graceful stop, as a rolling upgrade does)
 * for longer than the session timeout and started again on the same port and data folder. The
 * members ride it out: their requests fail or hang, each gives its tasks up after a session
 * timeout without an answer, finds the coordinator again once the broker is back (a coordinator
 * still loading is waited for), rejoins and restarts its tasks from their latest checkpoints,
 * whose transactions either committed before the stop or are aborted by the broker. Read back
 * read_committed: every input once, every running total and every window right.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePorts } from '../../../src/local-kafka/ports.ts';
import { auditClusterOutputs, BASE_TS, closers, producePayments, totalsAtLeast, useClusterBrokers, withMemberLogs } from '../../harness/cluster-job.ts';
import { cleanUpAfter, clusterTest, payment } from '../../harness/cluster-test.ts';
import { until } from '../../harness/weir-run.ts';

const SESSION_MS = 6000; // startClusterMember's --session-timeout

test('the broker under a cluster stops past the session timeout and comes back: the members rejoin and restart their tasks; exact', {
  timeout: 600_000,
}, async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-cluster-broker-restart-'));
  cleanUpAfter(() => rm(folder, { recursive: true, force: true }));
  const [port, controllerPort] = (await freePorts(2)) as [number, number];
  const dataDir = join(folder, 'kafka');
  const broker = () => startLocalBroker({ dataDir, port, controllerPort, heapMb: 384 });
  const started = await broker();
  cleanUpAfter(() => stopLocalBroker({ dataDir }).then(() => {}));
  useClusterBrokers([{ host: started.host, port }]);

  const scaffold = await clusterTest('broker-restart');
  const { topics, members } = scaffold;
  const all = Array.from({ length: 9000 }, (_, seq) => payment(seq));
  await withMemberLogs(members, async () => {
    await producePayments(topics.input, all.slice(0, 3000));
    const a = scaffold.member();
    const b = scaffold.member();
    await totalsAtLeast(topics, 1500);

    await stopLocalBroker({ dataDir });
    await sleep(SESSION_MS + 3000);
    for (const run of [a, b]) {
      assert.match(
        run.stderr(),
        /no answer from the group coordinator for a whole session timeout; giving up tasks|out of the group/,
        'a member held its tasks through the outage',
      );
    }
    const marks = [a, b].map((run) => run.stderr().length);
    await broker();

    // Both rejoin (a new generation with tasks) after the outage, and the job goes on.
    await until(
      'both members to rejoin after the broker came back',
      async () => ([a, b].every((run, i) => /generation \d+, \d+ tasks/.test(run.stderr().slice(marks[i]))) ? true : undefined),
      120_000,
    );
    await producePayments(topics.input, all.slice(3000));
    const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
    await producePayments(topics.input, last);
    await auditClusterOutputs(topics, [...all, ...last], all);
    for (const run of [a, b]) assert.equal(run.child.exitCode, null, 'a member exited during the outage');
  });
});
