import type { OpenTransaction } from '../connectors/kafka/transaction-driver.ts';
import type { RemoteTask } from './remote-task.ts';
import type { Stage } from './stage-plan.ts';
import type { TaskCheckpoint } from './task-checkpoint.ts';

/** One task as its member holds it. */
export interface TaskEntry {
  /** Its number in the group's assignment (over every stage). */
  global: number;
  stage: Stage;
  task: number;
  run: RemoteTask | undefined;
  /** Revoked (or the member closes): whatever is under way for it stops. */
  revoked: boolean;
  /** Fenced by a newer owner: it waits for the next assignment rather than fence that owner back. */
  fenced: boolean;
  failures: number;
  /** The producer (id and epoch) its current run writes with: every transaction of the run has them. */
  producer: Pick<OpenTransaction, 'transactionalId' | 'producerId' | 'producerEpoch'> | undefined;
  /** The group generation its latest commit carried (KIP-447): a commit the group refuses was refused for that generation. */
  committedWith: number | undefined;
  /** The generation that assigned it to this member. */
  assignedIn: number;
  /** Refused by the group: what its run said once stopped, and, once it starts again, the checkpoint it restores without reading (restart-checkpoint.ts). */
  refused: { run: RemoteTask; generation: number } | undefined;
  known: TaskCheckpoint | undefined;
  /** Its failed run's stop, under way: its next run starts after it (a run still writing beside it would be a zombie of this member's own). */
  stopping: Promise<void> | undefined;
}

/** A task the group assigned this member in `generation`, not started yet. */
export function taskEntry(global: number, stage: Stage, task: number, generation: number): TaskEntry {
  return {
    global,
    stage,
    task,
    run: undefined,
    revoked: false,
    fenced: false,
    failures: 0,
    producer: undefined,
    committedWith: undefined,
    assignedIn: generation,
    refused: undefined,
    known: undefined,
    stopping: undefined,
  };
}
