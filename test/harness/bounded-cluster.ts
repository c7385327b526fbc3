/** What the bounded cluster tests share: a member that leaves on its own, and every task's latest checkpoint record. */
import { setTimeout as sleep } from 'node:timers/promises';
import { clusterTopicName } from '../../src/cluster/stage-plan.ts';
import { latestTaskCheckpoints, type TaskCheckpoint } from '../../src/cluster/task-checkpoint.ts';
import { readTopic } from '../../src/connectors/kafka/topic-reader.ts';
import { testBrokers } from './kafka.ts';
import type { WeirRun } from './weir-run.ts';

/** The member's exit code, once it exited on its own; fails (naming it) when it has not by then. */
export async function exitsOnItsOwn(run: WeirRun, timeoutMs: number): Promise<number | null> {
  const code = await Promise.race([run.exited, sleep(timeoutMs).then(() => 'running' as const)]);
  if (code === 'running') throw new Error(`member ${run.child.pid} has not exited ${timeoutMs / 1000} s after the input ended`);
  return code;
}

/** Every task's latest committed checkpoint record, read back read_committed from the cluster's checkpoint topic. */
export async function latestTaskRecords(cluster: string): Promise<Map<string, TaskCheckpoint>> {
  const topic = clusterTopicName(cluster, 'checkpoints');
  return latestTaskCheckpoints(await readTopic({ bootstrap: testBrokers(), topic }), topic);
}
