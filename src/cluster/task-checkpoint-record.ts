import type { OperatorSubtaskState } from '../checkpoint/operator-subtask-state.ts';
import type { CheckpointLocation } from '../checkpoint/storage/checkpoint-location.ts';
import type { InputOffset, OffsetsOwner } from '../connectors/kafka/transaction-driver.ts';
import type { RestoreInfo } from '../runtime/deployment/restore-info.ts';
import type { SavepointBarrier } from './exchange-frames.ts';
import type { ChannelMark, ChannelSkip } from './exchange-input.ts';
import {
  TASK_CHECKPOINT_ENDED_VERSION,
  TASK_CHECKPOINT_SINK_COMMIT_VERSION,
  TASK_CHECKPOINT_VERSION,
  type TaskCheckpoint,
  type TaskSavepointPart,
} from './task-checkpoint.ts';

/** A checkpoint of a cluster task, triggered and not yet committed. */
export interface PendingCheckpoint {
  id: number;
  location: CheckpointLocation;
  /** A task behind exchanges: its partitions' offsets (a source task's come from its splits). */
  offsets: InputOffset[] | undefined;
  channels: ChannelMark[] | undefined;
  skips: ChannelSkip[] | undefined;
  /** The savepoint this checkpoint is the task's part of. */
  savepoint: SavepointBarrier | undefined;
  /** The task's final checkpoint: its input had ended when the barrier sealed its transaction (its end frames are in it). */
  ended?: boolean;
}

/** The record a task's checkpoint commits (task-checkpoint.ts). */
export function taskCheckpointRecord(options: {
  stage: string;
  task: number;
  pending: PendingCheckpoint;
  operators: readonly OperatorSubtaskState[];
  offsets: readonly InputOffset[];
  watermark: number;
  savepoint: TaskSavepointPart | undefined;
  restoredFrom: string | undefined;
  owner: OffsetsOwner;
  /** The task runs a two-phase-commit sink: its final record says its commit is pending. */
  committer?: boolean;
}): TaskCheckpoint {
  const { pending, savepoint, restoredFrom, owner, watermark } = options;
  const ended = pending.ended === true || pending.channels?.some((mark) => mark.ended === true) === true;
  const sinkCommit = pending.ended === true && options.committer === true;
  return {
    version: sinkCommit ? TASK_CHECKPOINT_SINK_COMMIT_VERSION : ended ? TASK_CHECKPOINT_ENDED_VERSION : TASK_CHECKPOINT_VERSION,
    stage: options.stage,
    task: options.task,
    checkpointId: pending.id,
    offsets: options.offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset: String(offset) })),
    state: {
      location: pending.location.path,
      operators: options.operators.flatMap(({ uid, keyed, operator }) =>
        keyed === undefined && operator === undefined ? [] : [{ uid, ...(keyed ? { keyed } : {}), ...(operator ? { operator } : {}) }],
      ),
    },
    watermark: Number.isFinite(watermark) ? watermark : null,
    ...(pending.channels === undefined
      ? {}
      : {
          channels: pending.channels.map((mark) => ({
            channel: mark.channel,
            watermark: Number.isFinite(mark.watermark) ? mark.watermark : null,
            idle: mark.idle,
            ...(mark.ended === true ? { ended: true as const } : {}),
          })),
        }),
    ...(pending.skips === undefined || pending.skips.length === 0 ? {} : { skips: pending.skips.map((skip) => ({ ...skip, below: String(skip.below) })) }),
    ...(savepoint === undefined ? {} : { savepoint }),
    ...(restoredFrom === undefined ? {} : { restoredFrom }),
    ...(pending.ended === true ? { ended: true as const } : {}),
    ...(sinkCommit ? { sinkCommit: 'pending' as const } : {}),
    member: { memberId: owner.memberId, generationId: owner.generationId },
    completedAt: Date.now(),
  };
}

/**
 * The record an ended task commits once its two-phase-commit sinks have committed the committables
 * of its final checkpoint (its member's, or its next owner's on restore): the same checkpoint, now
 * saying `sinkCommit: committed`, so the cluster's end no longer waits for it.
 */
export function sinkCommittedRecord(ended: TaskCheckpoint, owner: OffsetsOwner): TaskCheckpoint {
  return {
    ...ended,
    version: TASK_CHECKPOINT_SINK_COMMIT_VERSION,
    sinkCommit: 'committed',
    member: { memberId: owner.memberId, generationId: owner.generationId },
    completedAt: Date.now(),
  };
}

/**
 * What a task restores: its latest checkpoint's state files (subtask `task` at its stage's task
 * count), or, without a checkpoint of its own, the savepoint the cluster starts from (every
 * subtask at the savepoint's parallelism: the task takes its key groups and its share of the
 * operator state), or nothing.
 */
export function taskRestoreInfo(
  restored: TaskCheckpoint | undefined,
  fromSavepoint: RestoreInfo | undefined,
  maxParallelism: number,
  task: number,
  taskCount: number,
): RestoreInfo | undefined {
  if (restored === undefined) return fromSavepoint;
  if (restored.state == null) return undefined;
  return {
    checkpointId: restored.checkpointId,
    folder: restored.state.location,
    maxParallelism,
    operators: restored.state.operators.map((operator) => ({
      uid: operator.uid,
      parallelism: taskCount,
      subtasks: [{ subtaskIndex: task, ...(operator.keyed ? { keyed: operator.keyed } : {}), ...(operator.operator ? { operator: operator.operator } : {}) }],
    })),
    // The record committed with the task's Kafka transaction, but a two-phase-commit sink commits
    // its committables only after that (task-sink.ts): those it holds may not be committed yet.
    transactionsCommitted: false,
  };
}

/** A Kafka source task's offsets from its splits (topic, partition and next offset). */
export function sourceOffsets(splits: readonly unknown[]): InputOffset[] {
  return splits.flatMap((split) => {
    const entry = split as { topic?: unknown; partition?: unknown; offset?: unknown };
    return typeof entry.topic === 'string' && typeof entry.partition === 'number' && typeof entry.offset === 'bigint'
      ? [{ topic: entry.topic, partition: entry.partition, offset: entry.offset }]
      : [];
  });
}
