/**
 * Cluster mode across a network cut, on a broker of this test's own that listens beyond loopback:
 * three members share the job, one of them in a network namespace of its own. Its link goes down
 * for longer than the session timeout while input flows: the other two take its tasks, and the
 * cut-off member gives its own up after a session timeout without an answer, while still cut off
 * (it held them until the link returned: 8-15 s cuts in the chaos check); when the link comes
 * back, it rejoins (anything it still tried to commit is fenced). Read back read_committed: every input once, every running
 * total and every window right.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePorts } from '../../../src/local-kafka/ports.ts';
import type { Payment } from '../../fixtures/jobs/cluster-job.ts';
import {
  auditClusterOutputs,
  BASE_TS,
  closers,
  clusterJobTopics,
  producePayments,
  startClusterMember,
  stopMember,
  totalsAtLeast,
  useClusterBrokers,
} from '../../harness/cluster-job.ts';
import { createNetworkNamespace } from '../../harness/network-namespace.ts';
import { until, type WeirRun } from '../../harness/weir-run.ts';

const cleanups: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => {});
});

const payment = (seq: number): Payment => ({ seq, account: `a${seq % 40}`, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

test('a member cut off from the network past its session timeout: the others take its tasks; back, it is fenced and rejoins; exact', {
  timeout: 600_000,
}, async () => {
  const namespace = createNetworkNamespace(100 + Math.floor(Math.random() * 100));
  cleanups.push(() => namespace.remove());
  // The broker listens on every address and names the host's end of the namespace's link to clients.
  const folder = await mkdtemp(join(tmpdir(), 'weir-cluster-cut-'));
  cleanups.push(() => rm(folder, { recursive: true, force: true }));
  const [port, controllerPort] = (await freePorts(2)) as [number, number];
  await startLocalBroker({
    dataDir: join(folder, 'kafka'),
    port,
    controllerPort,
    heapMb: 384,
    overrides: {
      listeners: `PLAINTEXT://0.0.0.0:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      'advertised.listeners': `PLAINTEXT://${namespace.hostAddress}:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    },
  });
  cleanups.push(() => stopLocalBroker({ dataDir: join(folder, 'kafka') }).then(() => {}));
  useClusterBrokers([{ host: namespace.hostAddress, port }]);

  const topics = await clusterJobTopics();
  const storage = join(folder, 'checkpoints');
  const cluster = `weir-test-cut-${randomBytes(4).toString('hex')}`;
  const member = (wrap?: string[]) => {
    const run = startClusterMember({ cluster, storage, topics, interval: '500ms', ...(wrap === undefined ? {} : { wrap }) });
    cleanups.push(() => stopMember(run));
    return run;
  };
  const all = Array.from({ length: 9000 }, (_, seq) => payment(seq));
  await producePayments(topics.input, all.slice(0, 3000));
  const cutOff: WeirRun = member(namespace.wrap);
  member();
  member();
  await totalsAtLeast(topics, 1500);
  await cutOff.waitFor(/generation \d+, \d+ tasks/);

  namespace.cut();
  await producePayments(topics.input, all.slice(3000, 6000));
  await sleep(12_000); // twice the session timeout: the others own every task now
  await totalsAtLeast(topics, 5500);
  // Cut off, it cannot know it is out, but after a session timeout without an answer the
  // coordinator has dropped it: it gives its tasks up itself, before the link returns.
  const gaveUp = /no answer from the group coordinator for a whole session timeout; giving up tasks \d/;
  assert.match(cutOff.stderr(), gaveUp, 'the cut-off member still held its tasks two session timeouts into the cut');
  namespace.restore();
  await cutOff.waitFor(/out of the group|was fenced|no answer from the group coordinator/, 90_000);
  await until(
    'the cut-off member to rejoin',
    async () =>
      cutOff
        .stderr()
        .split(/out of the group|was fenced|no answer from the group coordinator/)
        .at(-1)
        ?.match(/generation \d+, \d+ tasks/)
        ? true
        : undefined,
    90_000,
  );
  await producePayments(topics.input, all.slice(6000));
  const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
  await producePayments(topics.input, last);
  await auditClusterOutputs(topics, [...all, ...last], all);
  assert.match(cutOff.stderr(), /task \d+ started/);
});
