import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import type { EnvironmentConfig } from '../../core/config/environment-config.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { StreamGraph } from '../../graph/stream-graph.ts';
import type { RestoreInfo } from '../deployment/restore-info.ts';
import { TaskMetrics } from '../metrics/task-metrics.ts';

/** How long the job's end waits for its sinks to finish their transactions before it reports the job's result anyway. */
export const SINK_JOB_END_TIMEOUT_MS = 90_000;

export interface SinkJobEndOptions {
  streamGraph: StreamGraph;
  graph: JobGraph;
  config: EnvironmentConfig;
  /** The latest completed checkpoint of the job (or what it started from), undefined when it has none. */
  latest: RestoreInfo | undefined;
  storage: CheckpointStorage | undefined;
  /** Where the warnings go (a sink that could not finish, the wait given up). */
  warn: (line: string) => void;
}

/**
 * The sinks' end: `waited` settles when they are done or after SINK_JOB_END_TIMEOUT_MS, `settled`
 * when they are done, with whether every sink finished its transactions (then every transaction the
 * latest checkpoint holds is committed).
 */
export interface SinksAtJobEnd {
  waited: Promise<void>;
  settled: Promise<boolean>;
}

/**
 * The job has ended, its tasks are gone: every sink with a {@link Sink.onJobEnd} hook gets one
 * context per subtask, restored from the latest completed checkpoint as a start from it would be,
 * and finishes what the tasks left open (a two-phase-commit sink commits what the checkpoint holds
 * and aborts the rest). A hook that fails or takes longer than {@link SINK_JOB_END_TIMEOUT_MS} is
 * logged; the job's result stands (the next start from the same storage recovers them as well).
 * Each hook's work catches its own failure, so both promises always resolve.
 */
export function finishSinksAtJobEnd(options: SinkJobEndOptions): SinksAtJobEnd {
  const { streamGraph, graph, config, latest, storage, warn } = options;
  const work: Promise<boolean>[] = [];
  for (const vertex of graph.vertices) {
    for (const nodeId of vertex.nodeIds) {
      const node = streamGraph.node(nodeId);
      if (node.kind !== 'sink' || node.sink.onJobEnd === undefined) continue;
      const uid = graph.nodes[nodeId]?.uid ?? node.uid;
      const hook = node.sink.onJobEnd.bind(node.sink);
      work.push(
        (async () => {
          // Loaded here, at the job's end: the job master needs the state backends for nothing else,
          // and a restart after a crash should not wait for them to load before it takes the lock.
          const { StreamTaskStateInitializer } = await import('../tasks/stream-task-state-initializer.ts');
          const subtasks: OperatorContext[] = [];
          for (let subtaskIndex = 0; subtaskIndex < vertex.parallelism; subtaskIndex++) {
            const state = new StreamTaskStateInitializer({
              maxParallelism: config.maxParallelism,
              parallelism: vertex.parallelism,
              subtaskIndex,
              restore: latest,
              storage,
            });
            subtasks.push({
              jobName: graph.jobName,
              operatorName: node.name,
              uid,
              subtaskIndex,
              parallelism: vertex.parallelism,
              maxParallelism: config.maxParallelism,
              attemptNumber: -1,
              restoredCheckpointId: latest?.checkpointId,
              restoredTransactionsCommitted: latest?.transactionsCommitted ?? false,
              restoredCheckpointSupersededBy: latest?.supersededBy,
              checkpointingMode: config.checkpointing?.mode ?? 'off',
              keyedState: undefined,
              operatorState: await state.operatorStateBackend(uid),
              metrics: new TaskMetrics().group(uid),
              currentProcessingTime: Date.now,
              requestProcessingTimeCallback: () => {},
              output: () => false,
              executeMail: () => {},
              emit: async () => {},
              emitWatermark: async () => {},
            });
          }
          await hook(subtasks);
          return true;
        })().catch((error: unknown) => {
          warn(
            `warning: sink "${node.name}" could not finish its transactions at the job's end: ${error instanceof Error ? error.message : String(error)} ` +
              "(what it left open is aborted by the broker's transaction timeout, or by the next start from this checkpoint storage)",
          );
          return false;
        }),
      );
    }
  }
  if (work.length === 0) return { waited: Promise.resolve(), settled: Promise.resolve(true) };
  const settled = Promise.all(work).then((finished) => finished.every(Boolean));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      warn(
        `warning: the sinks did not finish their transactions within ${SINK_JOB_END_TIMEOUT_MS} ms of the job's end; ` +
          "the job's result is reported, and they go on in the background (the checkpoint folder's lock is held until they are done)",
      );
      resolve();
    }, SINK_JOB_END_TIMEOUT_MS);
    timer.unref();
  });
  const waited = Promise.race([settled.then(() => {}), timeout]).finally(() => clearTimeout(timer));
  return { waited, settled };
}
