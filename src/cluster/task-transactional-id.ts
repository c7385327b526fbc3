import { clusterTopicName, type Stage } from './stage-plan.ts';

/**
 * The transactional id of a cluster task: fixed for the job's life, so every new owner fences the
 * old one. Readable (`weir-<cluster>-<stage uid>-<task>`, each part cut to 60 characters) and made
 * unambiguous by a hash of the parts, as the cluster's topic names are: cluster `a-b` with stage `c`
 * and cluster `a` with stage `b-c` no longer share ids (and fence each other forever).
 */
export function taskTransactionalId(clusterId: string, stage: Stage, task: number): string {
  return clusterTopicName(clusterId, stage.uid, String(task));
}

/**
 * The id a task had before {@link taskTransactionalId} carried a hash. A new owner fences it too, so
 * that during a rolling upgrade a member still on the old id cannot commit after its task moved;
 * once no such member is left it fences an id nobody uses.
 */
export function legacyTaskTransactionalId(clusterId: string, stage: Stage, task: number): string {
  return `weir-${clusterId}-${stage.uid}-${task}`;
}
