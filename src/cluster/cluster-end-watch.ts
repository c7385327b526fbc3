import { setTimeout as sleep } from 'node:timers/promises';
import type { ClusterConnections, TopicInfo } from '../connectors/kafka/cluster-connections.ts';
import { fetchedRecords, fetchPartitions } from '../connectors/kafka/partition-fetcher.ts';
import type { StreamGraph } from '../graph/stream-graph.ts';
import { decodeTaskCheckpoint, endedForGood } from './task-checkpoint.ts';

/** How often the checkpoint topic is read for new records. */
const POLL_MS = 500;

/** Whether every source of the job is bounded: only then can the job end (one unbounded source keeps its tasks, and those behind it, running). */
export function everySourceBounded(streamGraph: StreamGraph): boolean {
  const sources = streamGraph.nodes.filter((node) => node.kind === 'source');
  return sources.length > 0 && sources.every((node) => node.kind === 'source' && node.source.bounded);
}

export interface ClusterEndWatchOptions {
  clusterId: string;
  checkpointTopic: string;
  /** Every task of the cluster as its checkpoint records are keyed (`<stage>/<task>`: taskCheckpointKey). */
  tasks: readonly string[];
  /** Every source of the job is bounded (everySourceBounded): else the job never ends, and nothing is read. */
  bounded: boolean;
  /** Needed when bounded. */
  connections: ClusterConnections | undefined;
  /** Called by close() once nothing is read any more (connections of the watch's own closed). */
  onClose?: () => Promise<void>;
}

/**
 * Whether a cluster's job has ended (bounded input): every task's latest committed checkpoint
 * record says `ended` (its input ended, it finished and committed its final checkpoint with its
 * end frames: cluster-task.ts), and, for a task with a two-phase-commit sink, that its sink
 * committed that checkpoint's committables (`sinkCommit: committed`: a member that died between the
 * two commits leaves it `pending`, and the task's next owner commits them: the others wait for it). A member tails the cluster's checkpoint topic read_committed (what
 * it has not read yet, every 500 ms) and keeps each task's latest record; once every task's says
 * ended, {@link ended} resolves and the member leaves. No task runs again after that (an ended
 * task stays ended with any owner), so every member sees the same and leaves too, one started
 * later as well. A job with an unbounded source never ends: nothing is read.
 */
export class ClusterEndWatch {
  readonly #options: ClusterEndWatchOptions;
  readonly #ended = Promise.withResolvers<void>();
  /** The tasks whose latest record says ended. */
  readonly #endedTasks = new Set<string>();
  readonly #offsets = new Map<number, bigint>();
  readonly #loop: Promise<void>;
  #closed = false;
  #wake: (() => void) | undefined;

  constructor(options: ClusterEndWatchOptions) {
    this.#options = options;
    const { connections } = options;
    this.#loop = options.bounded && options.tasks.length > 0 && connections !== undefined ? this.#run(connections) : Promise.resolve();
  }

  /** Resolves once every task of the cluster has committed a record saying ended. */
  get ended(): Promise<void> {
    return this.#ended.promise;
  }

  /** The tasks that have ended so far, of how many. */
  get progress(): { ended: number; tasks: number } {
    return { ended: this.#endedTasks.size, tasks: this.#options.tasks.length };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#wake?.();
    await this.#loop;
    await this.#options.onClose?.();
  }

  async #run(connections: ClusterConnections): Promise<void> {
    const { checkpointTopic, tasks } = this.#options;
    const wanted = new Set(tasks);
    let info: TopicInfo | undefined;
    while (!this.#closed) {
      try {
        info ??= await connections.topic(checkpointTopic);
        const results = await fetchPartitions(
          connections,
          new Map([[checkpointTopic, info]]),
          info.partitions.map((partition) => ({
            topic: checkpointTopic,
            partition: partition.partition,
            offset: this.#offsets.get(partition.partition) ?? 0n,
          })),
          { isolation: 'read_committed', maxWaitMs: 100 },
        );
        for (const result of results) {
          const from = this.#offsets.get(result.partition) ?? 0n;
          for (const record of fetchedRecords(result)) {
            if (record.offset < from || record.key === null) continue;
            const key = record.key.toString('utf8');
            const ended =
              record.value !== null && endedForGood(decodeTaskCheckpoint(record.value, `${checkpointTopic}/${record.partition} offset ${record.offset}`));
            if (ended) this.#endedTasks.add(key);
            else this.#endedTasks.delete(key); // a later record (or a tombstone) is what holds
          }
          if (result.nextOffset > from) this.#offsets.set(result.partition, result.nextOffset);
        }
        if ([...wanted].every((task) => this.#endedTasks.has(task))) {
          this.#ended.resolve();
          return;
        }
      } catch {
        info = undefined; // not there yet, its leader moved, or the brokers are away: asked again
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        void sleep(POLL_MS, undefined, { ref: false }).then(resolve);
      });
      this.#wake = undefined;
    }
  }
}
