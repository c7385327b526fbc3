import type { StopMode } from '../../checkpoint/stop-mode.ts';
import type { CheckpointLocation } from '../../checkpoint/storage/checkpoint-location.ts';

/**
 * A control action for a task's mailbox (Flink's Mail): it runs on the task's loop, before any more
 * input is taken, so it never races with records, watermarks or barriers.
 */
export type Mail =
  /** The coordinator triggers checkpoint N at a source task (with `stop`: a stopping savepoint). */
  | { kind: 'trigger-checkpoint'; location: CheckpointLocation; stop: StopMode | undefined }
  /** Checkpoint N completed: the operators commit what it holds. */
  | { kind: 'notify-checkpoint-complete'; checkpointId: number }
  /** Checkpoint N was aborted. */
  | { kind: 'notify-checkpoint-aborted'; checkpointId: number }
  /** Processing time reached what operator `operatorIndex` of the chain asked for. */
  | { kind: 'processing-time'; operatorIndex: number }
  /** An operator's own work for the loop (OperatorContext.executeMail: async I/O's results). */
  | { kind: 'operator'; action: () => Promise<void> };
