import { WeirError } from '../core/errors/weir-error.ts';
import type { JobClient, JobResult, JobStatus } from '../runtime/jobmaster/job-client.ts';
import { JobMetrics } from '../runtime/metrics/job-metrics.ts';
import type { ClusterMember } from './cluster-member.ts';

/**
 * A cluster member as the dashboard and REST API see a job (`JobClient`): its own tasks as the
 * subtasks of their stages' vertices (records, rates, back pressure, watermarks, operator
 * metrics), the checkpoints they committed, and their failures. Savepoints are not built for a
 * cluster yet: asking for one is refused by name. Cancelling leaves the cluster.
 */
export function clusterMemberClient(member: ClusterMember, left: Promise<void>): JobClient {
  const metrics = new JobMetrics();
  const graph = member.graph;
  let leaving: Promise<void> | undefined;
  const result: Promise<JobResult> = left.then(() => ({
    restarts: member.failures.length,
    cancelled: true,
    lastCheckpointId: member.taskMetrics(Date.now()).latestCheckpointId,
  }));
  const noSavepoints = () =>
    Promise.reject(
      new WeirError('INVALID_CONFIG', 'savepoints of a cluster-mode job are not built yet', {
        hint: 'each task checkpoints on its own (docs/scale-out.md); stop a member with SIGTERM: its tasks go to the others',
      }),
    );
  return {
    graph,
    config: member.config,
    triggerSavepoint: noSavepoints,
    stopWithSavepoint: noSavepoints,
    cancel: async () => {
      leaving ??= member.close();
      await leaving;
      return result;
    },
    result,
    status: (): JobStatus => {
      const now = Date.now();
      const tasks = member.taskMetrics(now);
      metrics.update(tasks.snapshots, now);
      const failure = member.failures.at(-1);
      return {
        name: graph.jobName,
        state: leaving === undefined ? 'running' : 'cancelled',
        attempt: 0,
        restarts: member.failures.map((entry) => ({ at: entry.at, cause: `${entry.task}: ${entry.message}` })),
        checkpoints: [],
        checkpointCounts: { total: tasks.completed, completed: tasks.completed, failed: 0, inProgress: 0, restored: 0 },
        latestCheckpointId: tasks.latestCheckpointId,
        vertices: metrics.vertices(graph),
        failure: failure === undefined ? undefined : { at: failure.at, message: `${failure.task}: ${failure.message}`, hint: undefined, stack: failure.stack },
      };
    },
  };
}
