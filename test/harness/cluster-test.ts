/** The scaffolding of a cluster-mode test: its cleanups, the test job's topics, a storage folder, a cluster id and its members. */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Payment } from '../fixtures/jobs/cluster-job.ts';
import { BASE_TS, type ClusterJobTopics, clusterJobTopics, producePayments, startClusterMember, stopMember } from './cluster-job.ts';
import type { WeirRun } from './weir-run.ts';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** Runs after the test file's tests, the last registered first. */
export function cleanUpAfter(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}

/** Payment `seq` of 40 accounts over every partition. */
export const payment = (seq: number): Payment => ({ seq, account: `a${seq % 40}`, amount: (seq % 7) + 1, ts: BASE_TS + seq * 5 });

/** Produces 40 payments (`make(seq)`) every 100 ms until stopped, which resolves with all it produced. */
export function steadyInput(topic: string, make: (seq: number) => Payment = payment): { stop: () => Promise<Payment[]> } {
  const produced: Payment[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const batch = Array.from({ length: 40 }, (_, i) => make(produced.length + i));
      await producePayments(topic, batch);
      produced.push(...batch);
      await sleep(100);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return produced;
    },
  };
}

export interface ClusterTest {
  cluster: string;
  topics: ClusterJobTopics;
  storage: string;
  /** Every member started, for withMemberLogs. */
  members: WeirRun[];
  /** Starts a member of the cluster (killed after the test). */
  member(options?: { interval?: string; env?: Record<string, string>; args?: string[]; ui?: boolean; module?: string }): WeirRun;
}

/** Fresh topics, storage and cluster id (`weir-test-<name>-<random>`), all removed after the test. */
export async function clusterTest(name: string, cluster = `weir-test-${name}-${randomBytes(4).toString('hex')}`): Promise<ClusterTest> {
  const topics = await clusterJobTopics();
  cleanUpAfter(topics.remove);
  const storage = await mkdtemp(join(tmpdir(), `weir-cluster-${name}-`));
  cleanUpAfter(() => rm(storage, { recursive: true, force: true }));
  const members: WeirRun[] = [];
  return {
    cluster,
    topics,
    storage,
    members,
    member: (options = {}) => {
      const run = startClusterMember({
        cluster,
        storage,
        topics,
        interval: options.interval ?? '500ms',
        env: options.env,
        args: options.args,
        ui: options.ui,
        module: options.module,
      });
      members.push(run);
      cleanUpAfter(() => stopMember(run));
      return run;
    },
  };
}
