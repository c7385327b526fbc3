import type { ConnectionOptions } from '@platformatic/kafka';
import type { BrokerAddress } from '../connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../connectors/kafka/topic-reader.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { RestoreInfo } from '../runtime/deployment/restore-info.ts';
import { findRestorePoint } from '../runtime/jobmaster/restore-point.ts';
import { latestTaskCheckpoints } from './task-checkpoint.ts';

/**
 * `weir run --cluster <id> --from-savepoint <folder>`: the savepoint (one process's or a
 * cluster's: the same canonical format) a new cluster starts from, checked against the job as one
 * process checks it (the same maxParallelism, every operator with state still there by uid). Each
 * task without a checkpoint of its own restores its key groups and splits from it, at its stage's
 * task count (any parallelism restores any other); a task's checkpoint records carry where the
 * cluster started from. A cluster that has run already is refused: its tasks' own checkpoints
 * are what it goes on from, and a savepoint starts a new cluster id.
 */
export async function clusterStartingSavepoint(options: {
  cluster: string;
  graph: JobGraph;
  /** The savepoint's folder; undefined: the cluster does not start from one. */
  path: string | undefined;
  bootstrap: readonly BrokerAddress[];
  connection: ConnectionOptions;
  checkpointTopic: string;
  timeoutMs: number;
  log: (line: string) => void;
}): Promise<RestoreInfo | undefined> {
  if (options.path === undefined) return undefined;
  const restore = await findRestorePoint(options.graph, undefined, { fromSavepoint: options.path });
  if (restore === undefined) throw new Error(`no restore point at ${options.path}`); // readMetadata throws first
  const { checkpointTopic } = options;
  const records = latestTaskCheckpoints(
    await readTopic({ bootstrap: options.bootstrap, connection: options.connection, topic: checkpointTopic, timeoutMs: options.timeoutMs }),
    checkpointTopic,
  );
  const other = [...records.values()].find((checkpoint) => checkpoint.restoredFrom !== restore.folder);
  if (other !== undefined) {
    throw new WeirError(
      'INVALID_CONFIG',
      `cluster "${options.cluster}" has run already (task ${other.stage}/${other.task} has checkpoint ${other.checkpointId}, ${other.restoredFrom === undefined ? 'not started from a savepoint' : `started from ${other.restoredFrom}`}), so it cannot start from ${restore.folder}`,
      {
        hint: `give --cluster a new id to start from the savepoint (a cluster's topics and checkpoints are its own), or start the members without --from-savepoint to go on from the cluster's own checkpoints`,
      },
    );
  }
  options.log(`cluster "${options.cluster}": its tasks start from ${restore.kind} ${restore.checkpointId} (${restore.folder})`);
  return restore;
}
