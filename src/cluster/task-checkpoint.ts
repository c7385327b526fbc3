import type { MessageRecord } from '@platformatic/kafka';
import { z } from 'zod';
import { stateHandleSchema } from '../checkpoint/storage/checkpoint-metadata.ts';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { murmur2 } from '../connectors/kafka/murmur2.ts';
import type { TopicRecord } from '../connectors/kafka/partition-fetcher.ts';
import { fencedOr, type InputOffset, type OffsetsOwner, type OpenTransaction, type TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { decodeVersionedJson } from './versioned-json.ts';

/**
 * A task's checkpoint in cluster mode, and how it becomes one: per task and checkpoint, in the
 * task's one Kafka transaction, (a) its output records, (b) its input offsets (TxnOffsetCommit
 * with the group's generation, KIP-447) and (c) this record, keyed by the task, in the job's
 * compacted checkpoint topic, naming the state files (written to the shared checkpoint storage
 * before) and the watermark; then the commit. The checkpoint exists if and only if that
 * transaction committed: there is no window between "checkpoint complete" and "output committed"
 * to recover, and nothing a zombie writes is ever referenced, because its transaction cannot
 * commit (the new owner's InitProducerId fenced its epoch, and the group refuses its generation).
 */

export const TASK_CHECKPOINT_VERSION = 1;
/**
 * The version of a record that says its task, or one of its channels, ended (bounded input): a
 * member of an older Weir refuses it by name rather than run an ended task again. Every other
 * record is still written as version 1.
 */
export const TASK_CHECKPOINT_ENDED_VERSION = 2;
/**
 * The version of an ended task's record that says whether its two-phase-commit sinks committed
 * the committables of its final checkpoint (`sinkCommit`): a member of an older Weir refuses it by
 * name rather than leave before they are. Versions 1 and 2 are still read (and written).
 */
export const TASK_CHECKPOINT_SINK_COMMIT_VERSION = 3;

const taskCheckpointSchema = z.object({
  version: z.union([z.literal(TASK_CHECKPOINT_VERSION), z.literal(TASK_CHECKPOINT_ENDED_VERSION), z.literal(TASK_CHECKPOINT_SINK_COMMIT_VERSION)]),
  stage: z.string().min(1),
  task: z.number().int().nonnegative(),
  checkpointId: z.number().int().positive(),
  /** The next offset to read of every input partition of the task (decimal strings: offsets are 64-bit). */
  offsets: z.array(z.object({ topic: z.string(), partition: z.number().int().nonnegative(), offset: z.string().regex(/^\d+$/) })),
  /** The task's state files in the shared checkpoint storage (by operator uid, relative to the location); null for a stateless task. */
  state: z
    .object({
      location: z.string(),
      operators: z.array(z.object({ uid: z.string(), keyed: stateHandleSchema.optional(), operator: stateHandleSchema.optional() })),
    })
    .nullable(),
  /** The task's watermark at the checkpoint; null before the first. */
  watermark: z.number().nullable(),
  /**
   * A task behind exchanges: what each upstream channel's latest watermark frame said (watermark
   * null: none yet), given back on restore, as an idle upstream task writes no more frames.
   * Absent in records of older versions (their tasks wrote a frame every checkpoint).
   */
  channels: z
    .array(
      z.object({
        channel: z.number().int().nonnegative(),
        watermark: z.number().nullable(),
        idle: z.boolean(),
        /** The upstream task's end frame came on this channel (version 2). */
        ended: z.literal(true).optional(),
      }),
    )
    .optional(),
  /**
   * Frames of a channel below an offset of its partition that are in the state already (a
   * savepoint's alignment ended past them on other channels): read past on restore. Absent: none.
   */
  skips: z
    .array(
      z.object({ topic: z.string(), partition: z.number().int().nonnegative(), channel: z.number().int().nonnegative(), below: z.string().regex(/^\d+$/) }),
    )
    .optional(),
  /**
   * The latest savepoint this task wrote its part of (cluster-savepoint.ts), carried by every later
   * record: its state files (relative to the savepoint's folder) as the savepoint's `_metadata` names
   * them, the task being subtask `task` of its stage's operators at parallelism `parallelism`.
   */
  savepoint: z
    .object({
      id: z.number().int().positive(),
      target: z.string(),
      stop: z.enum(['suspend', 'drain']).optional(),
      jobName: z.string(),
      maxParallelism: z.number().int().positive(),
      parallelism: z.number().int().positive(),
      operators: z.array(z.object({ uid: z.string(), name: z.string(), keyed: stateHandleSchema.optional(), operator: stateHandleSchema.optional() })),
      /**
       * The task runs a two-phase-commit sink (task-sink.ts): its part holds committables the sink
       * commits only after the part's transaction, so the savepoint is not marked committed (a
       * restore from it commits them again). Absent: none.
       */
      committables: z.literal(true).optional(),
    })
    .optional(),
  /** The savepoint the cluster started from (`weir run --cluster --from-savepoint`), carried by every later record. */
  restoredFrom: z.string().optional(),
  /**
   * The task's input ended and it finished (version 2): this is its final checkpoint, committed
   * with its end frames; no owner runs the task again (cluster-task.ts). Absent: it runs on.
   */
  ended: z.literal(true).optional(),
  /**
   * An ended task with a two-phase-commit sink (version 3): `pending`, its final checkpoint is
   * committed in Kafka but its sinks' commit of the committables it holds is not known done (an
   * owner restoring it commits them again, idempotently, then commits the record again saying
   * `committed`); `committed`, they are. The cluster's end waits for `committed`. Absent: no such sink.
   */
  sinkCommit: z.enum(['pending', 'committed']).optional(),
  /** Which member committed it, in which generation. */
  member: z.object({ memberId: z.string(), generationId: z.number().int() }),
  completedAt: z.number(),
});

export type TaskCheckpoint = z.infer<typeof taskCheckpointSchema>;
export type TaskSavepointPart = NonNullable<TaskCheckpoint['savepoint']>;

/** The checkpoint topic's key of a task. */
export function taskCheckpointKey(stage: string, task: number): string {
  return `${stage}/${task}`;
}

/** A task's checkpoint as the record the checkpoint topic holds (JSON, versioned). */
export function encodeTaskCheckpoint(checkpoint: TaskCheckpoint): Buffer {
  return Buffer.from(JSON.stringify(taskCheckpointSchema.parse(checkpoint)));
}

export function decodeTaskCheckpoint(bytes: Buffer, where: string): TaskCheckpoint {
  return decodeVersionedJson(
    taskCheckpointSchema,
    bytes,
    TASK_CHECKPOINT_SINK_COMMIT_VERSION,
    (problem) =>
      new WeirError(
        problem.kind === 'too-new' ? 'CHECKPOINT_METADATA_TOO_NEW' : 'CHECKPOINT_METADATA_CORRUPT',
        problem.kind === 'too-new'
          ? `the task checkpoint at ${where} is of version ${problem.version}; this Weir reads versions ${TASK_CHECKPOINT_VERSION} to ${TASK_CHECKPOINT_SINK_COMMIT_VERSION}`
          : `the task checkpoint at ${where} does not read: ${problem.issue}`,
        { hint: 'run every member with the same Weir version; upgrade, do not downgrade, a running cluster', fault: 'external' },
      ),
  );
}

/**
 * The task ended for good: its record says ended, and its two-phase-commit sinks (if any) have
 * committed its final committables. A cluster's job has ended once every task's record says so.
 */
export function endedForGood(checkpoint: TaskCheckpoint | undefined): boolean {
  return checkpoint?.ended === true && checkpoint.sinkCommit !== 'pending';
}

/** The task's input offsets as the checkpoint keeps them. */
export function offsetsOf(checkpoint: TaskCheckpoint): InputOffset[] {
  return checkpoint.offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset: BigInt(offset) }));
}

/** Writes a task's output into its open transaction; a fenced producer (the task moved) is TASK_FENCED. */
export async function writeTaskOutput(driver: TransactionDriver, transaction: OpenTransaction, records: MessageRecord[]): Promise<void> {
  try {
    await driver.send(transaction, records);
  } catch (error) {
    throw fencedOr(error, transaction.transactionalId);
  }
}

/**
 * Completes a task's checkpoint in its open transaction: the checkpoint record and the input
 * offsets go in with the output already written, then EndTxn commits all of it at once. Throws
 * when this member or producer was fenced (its work moved): then nothing of it becomes visible.
 */
export async function commitTaskCheckpoint(
  driver: TransactionDriver,
  connections: ClusterConnections,
  transaction: OpenTransaction,
  owner: OffsetsOwner,
  checkpointTopic: string,
  checkpoint: TaskCheckpoint,
): Promise<void> {
  const key = Buffer.from(taskCheckpointKey(checkpoint.stage, checkpoint.task));
  const partitions = (await connections.topic(checkpointTopic)).partitions.length;
  try {
    await driver.send(transaction, [
      { topic: checkpointTopic, partition: (murmur2(key) & 0x7fffffff) % partitions, key, value: encodeTaskCheckpoint(checkpoint) },
    ]);
    await driver.sendOffsets(transaction, owner, offsetsOf(checkpoint));
  } catch (error) {
    throw fencedOr(error, transaction.transactionalId);
  }
  await driver.commitOpen(transaction);
}

/** The latest committed checkpoint of every task, from the checkpoint topic's records (read read_committed, in offset order). */
export function latestTaskCheckpoints(records: readonly TopicRecord[], checkpointTopic: string): Map<string, TaskCheckpoint> {
  const latest = new Map<string, TaskCheckpoint>();
  const ordered = [...records].sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
  for (const record of ordered) {
    if (record.key === null) continue;
    const key = record.key.toString('utf8');
    if (record.value === null) {
      latest.delete(key); // a tombstone: the task's checkpoints were dropped
      continue;
    }
    latest.set(key, decodeTaskCheckpoint(record.value, `${checkpointTopic}/${record.partition} offset ${record.offset}`));
  }
  return latest;
}
