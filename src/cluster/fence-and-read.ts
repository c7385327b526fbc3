import { readTopic } from '../connectors/kafka/topic-reader.ts';
import type { OpenTransaction } from '../connectors/kafka/transaction-driver.ts';
import type { MemberSetup } from './member-setup.ts';
import type { Stage } from './stage-plan.ts';
import { latestTaskCheckpoints, type TaskCheckpoint, taskCheckpointKey } from './task-checkpoint.ts';
import { restoreReadTimeoutMs } from './task-transaction-timeout.ts';
import { legacyTaskTransactionalId, taskTransactionalId } from './task-transactional-id.ts';

/** A task about to start on its member, and the checkpoint it starts from if that is known already (restart-checkpoint.ts). */
export interface StartingTask {
  stage: Stage;
  task: number;
  known: TaskCheckpoint | undefined;
}

/**
 * Fences every earlier owner of each task (InitProducerId on its transactional id: whatever they
 * left open is aborted), then reads the checkpoint topic once for the tasks whose checkpoint is not
 * known: after the fencing, so the latest committed record is final. Per task: its producer (or
 * why it could not be opened) and the checkpoint it restores (or why it could not be read).
 */
export async function fenceAndRead(
  setup: Pick<MemberSetup, 'driver' | 'plan' | 'bootstrap' | 'connection'>,
  clusterId: string,
  tasks: readonly StartingTask[],
): Promise<{ open: OpenTransaction | Error; restored: TaskCheckpoint | undefined | Error }[]> {
  const { driver, plan, bootstrap, connection } = setup;
  const opens = await Promise.all(
    tasks.map(async ({ stage, task, known }) => {
      try {
        // The id an older Weir gave the task is fenced too (a member not yet upgraded that owned it
        // cannot commit after the task moved); nothing is written under it. Once per assignment: a
        // task starting again from a known checkpoint was fenced so at its assignment's first start.
        const [open] = await Promise.all([
          driver.initTransaction(taskTransactionalId(clusterId, stage, task)),
          known === undefined ? driver.abortLingering(legacyTaskTransactionalId(clusterId, stage, task)) : undefined,
        ]);
        return open;
      } catch (error) {
        return error as Error;
      }
    }),
  );
  let checkpoints: Map<string, TaskCheckpoint> | Error = new Map();
  if (tasks.some(({ known }) => known === undefined)) {
    try {
      // The read waits behind other tasks' open transactions, each open at most the transaction timeout: so may the read.
      const timeoutMs = restoreReadTimeoutMs(driver.transactionTimeoutMs);
      checkpoints = latestTaskCheckpoints(await readTopic({ bootstrap, connection, topic: plan.checkpointTopic, timeoutMs }), plan.checkpointTopic);
    } catch (error) {
      checkpoints = error as Error;
    }
  }
  return tasks.map(({ stage, task, known }, index) => ({
    open: opens[index] as OpenTransaction | Error,
    restored: known ?? (checkpoints instanceof Error ? checkpoints : checkpoints.get(taskCheckpointKey(stage.uid, task))),
  }));
}
