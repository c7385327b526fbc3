import type { CheckpointStats, CheckpointStatsCounts } from '../../checkpoint/checkpoint-stats-tracker.ts';
import type { CompletedCheckpoint } from '../../checkpoint/completed-checkpoint.ts';
import type { EnvironmentConfig, EnvironmentConfigInput } from '../../core/config/environment-config.ts';
import type { Logger } from '../../core/logging/logger.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { VertexMetrics } from '../metrics/job-metrics.ts';
import type { WarmWorkers } from './warm-workers.ts';

export interface RunJobOptions {
  /** Path (or file URL) of the job module. */
  job: string;
  /** Options over the job's own `config` (and over the config file's). */
  config?: EnvironmentConfigInput;
  /** A job config file's settings (`weir run --config`): over the job's own, under `config`; its path names it in errors. */
  configFile?: { path: string; config: EnvironmentConfigInput } | undefined;
  /** Start without restoring the latest checkpoint of the checkpoint folder. */
  fresh?: boolean;
  /** Start from this savepoint (or checkpoint) folder. */
  fromSavepoint?: string;
  /** Where the job logs: a Logger (levels, times; `weir run` passes its pino logger), or a line callback (info and above, the message only). */
  log?: Logger | ((line: string) => void);
  /** How often the checkpoint summary is logged at info; per-checkpoint lines are debug. Default 1 minute. */
  logSummaryIntervalMs?: number;
  onEvent?: (event: JobEvent) => void;
  /** Worker threads `weir run` started before the job (warm-workers.ts): the first attempt takes those that fit; the job closes the rest. */
  warmWorkers?: WarmWorkers;
}

export type JobEvent =
  | { type: 'started'; attempt: number; restoredCheckpointId: number | undefined }
  | { type: 'checkpoint-completed'; checkpointId: number; durationMs: number; bytes: number; alignmentMs: number }
  | { type: 'checkpoint-aborted'; checkpointId: number }
  | { type: 'restarting'; attempt: number; delayMs: number; cause: string }
  | { type: 'finished' };

export interface JobResult {
  restarts: number;
  /** The job was cancelled ({@link JobClient.cancel}) rather than run to its end. */
  cancelled?: boolean;
  lastCheckpointId: number | undefined;
}

/** A handle on a running job: savepoints and stop-with-savepoint act through it. */
export interface JobClient {
  readonly graph: JobGraph;
  readonly config: EnvironmentConfig;
  triggerSavepoint(): Promise<CompletedCheckpoint>;
  /**
   * Stops the job with a savepoint (Flink's stop-with-savepoint): the sources emit nothing after
   * its barrier. `drain`: first the end-of-event-time watermark, so every event-time window and
   * timer fires into the savepoint (for a job that will not be resumed, or not soon).
   */
  stopWithSavepoint(options?: { drain?: boolean }): Promise<CompletedCheckpoint>;
  /**
   * Cancels the job (Flink's cancel, what `weir run` does on SIGTERM or SIGINT): checkpointing
   * stops, the tasks close, and the sinks abort their open transactions. Pre-committed ones of a
   * checkpoint that did not complete stay for the next start to abort; it resumes from the latest
   * completed checkpoint. Resolves with the job's result.
   */
  cancel(): Promise<JobResult>;
  readonly result: Promise<JobResult>;
  /** What runs now: for the REST API and the dashboard. */
  status(): JobStatus;
}

export interface JobStatus {
  name: string;
  /** 'starting': the workers are loading the job and opening its tasks (Flink's INITIALIZING). */
  state: 'starting' | 'running' | 'restarting' | 'finished' | 'cancelled' | 'failed';
  attempt: number;
  restarts: { at: number; cause: string }[];
  /** The latest checkpoints (a bounded history). */
  checkpoints: CheckpointStats[];
  /** Counts over the job's life in this process, across its restarts (never capped). */
  checkpointCounts: CheckpointStatsCounts;
  latestCheckpointId: number | undefined;
  /** Per job vertex: records in and out, rates, back pressure, operator metrics (this attempt). */
  vertices: VertexMetrics[];
  /** The latest failure of an attempt (the cause of the latest restart, or why the job failed); its message names the job's file and line for an error of user code. */
  failure?: { at: number; message: string; hint: string | undefined; stack: string | undefined } | undefined;
}
