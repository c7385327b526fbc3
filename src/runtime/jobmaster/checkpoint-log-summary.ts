import type { Logger } from '../../core/logging/logger.ts';
import { formatDuration } from '../../core/time/duration.ts';
import type { JobGraph } from '../../graph/job-graph.ts';
import type { JobMetrics } from '../metrics/job-metrics.ts';

/** How often the checkpoint summary is logged at info, unless set. */
export const DEFAULT_LOG_SUMMARY_INTERVAL_MS = 60_000;

/** Records a second the job's sources read and its last vertices take in, now. */
export interface Throughput {
  inPerSecond: number;
  outPerSecond: number;
}

/**
 * The job's checkpoints in the log: one line per checkpoint at debug, and at info a summary every
 * interval (completed and aborted since the last one, the latest checkpoint's id, duration and
 * size, records a second in and out), only when something happened.
 */
export class CheckpointLogSummary {
  readonly #logger: Logger;
  readonly #timer: NodeJS.Timeout;
  readonly #throughput: () => Throughput | undefined;
  #completed = 0;
  #aborted = 0;
  #last: { checkpointId: number; durationMs: number; bytes: number } | undefined;

  constructor(logger: Logger, intervalMs = DEFAULT_LOG_SUMMARY_INTERVAL_MS, throughput: () => Throughput | undefined = () => undefined) {
    this.#logger = logger;
    this.#throughput = throughput;
    this.#timer = setInterval(() => this.flush(), intervalMs);
    this.#timer.unref();
  }

  completed(checkpointId: number, durationMs: number, bytes: number): void {
    this.#completed++;
    this.#last = { checkpointId, durationMs, bytes };
    this.#logger.debug(`checkpoint ${checkpointId} completed in ${durationMs} ms (${bytes} bytes of state)`, { checkpointId, durationMs, bytes });
  }

  /** An aborted checkpoint is counted here; the job master warns of it itself. */
  aborted(): void {
    this.#aborted++;
  }

  /** Logs the summary of what happened since the last one, if anything did. */
  flush(): void {
    const throughput = this.#throughput();
    const flowing = throughput !== undefined && (throughput.inPerSecond > 0 || throughput.outPerSecond > 0);
    if (this.#completed === 0 && this.#aborted === 0 && !flowing) return;
    const last = this.#last;
    const latest = last === undefined ? '' : `; latest ${last.checkpointId}, ${formatDuration(last.durationMs)}, ${last.bytes} bytes of state`;
    const rates = throughput === undefined ? '' : `; ${Math.round(throughput.inPerSecond)} records/s in, ${Math.round(throughput.outPerSecond)} out`;
    this.#logger.info(`checkpoints: ${this.#completed} completed, ${this.#aborted} aborted since the last summary${latest}${rates}`, {
      completed: this.#completed,
      aborted: this.#aborted,
      ...(last === undefined ? {} : { latestCheckpointId: last.checkpointId, latestDurationMs: last.durationMs, latestBytes: last.bytes }),
      ...(throughput === undefined ? {} : { recordsInPerSecond: throughput.inPerSecond, recordsOutPerSecond: throughput.outPerSecond }),
    });
    this.#completed = 0;
    this.#aborted = 0;
  }

  close(): void {
    clearInterval(this.#timer);
    this.flush();
  }
}

/** Records a second into the job (what its sources emit) and out of it (what its last vertices take in). */
export function throughputOf(graph: JobGraph, metrics: JobMetrics): { inPerSecond: number; outPerSecond: number } {
  let inPerSecond = 0;
  let outPerSecond = 0;
  for (const vertex of metrics.vertices(graph)) {
    if (!graph.edges.some((edge) => edge.target === vertex.id)) inPerSecond += vertex.recordsOutPerSecond;
    if (!graph.edges.some((edge) => edge.source === vertex.id)) outPerSecond += vertex.recordsInPerSecond;
  }
  return { inPerSecond, outPerSecond };
}
