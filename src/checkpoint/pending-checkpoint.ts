import { channelStateHead } from '../graph/channel-state-uid.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { CompletedCheckpoint } from './completed-checkpoint.ts';
import type { OperatorSubtaskState } from './operator-subtask-state.ts';
import type { CheckpointLocation } from './storage/checkpoint-location.ts';
import { type CheckpointMetadata, metadataVersionFor, type OperatorStateMetadata } from './storage/checkpoint-metadata.ts';

/** One subtask of a job vertex: who acknowledges a checkpoint. */
export interface TaskId {
  vertexId: number;
  subtaskIndex: number;
}

const keyOf = (task: TaskId) => `${task.vertexId}/${task.subtaskIndex}`;

/** Every subtask of a job graph. */
export function tasksOf(graph: JobGraph): TaskId[] {
  return graph.vertices.flatMap((vertex) => Array.from({ length: vertex.parallelism }, (_, subtaskIndex) => ({ vertexId: vertex.id, subtaskIndex })));
}

/**
 * A checkpoint that was triggered and waits for its acknowledgements (Flink's PendingCheckpoint):
 * each task acknowledges once, with the handles of the state it wrote; when every task has, the
 * coordinator finalizes it into metadata and completes it, or aborts it.
 */
export class PendingCheckpoint {
  readonly checkpointId: number;
  readonly kind: 'checkpoint' | 'savepoint';
  readonly location: CheckpointLocation;
  readonly triggeredAt: number;
  /** Settles when the checkpoint completes or is aborted. */
  readonly promise: Promise<CompletedCheckpoint>;
  readonly #notYetAcknowledged: Map<string, TaskId>;
  readonly #acknowledged = new Map<string, { task: TaskId; operators: OperatorSubtaskState[] }>();
  #resolve!: (completed: CompletedCheckpoint) => void;
  #reject!: (error: Error) => void;
  #timeout: NodeJS.Timeout | undefined;

  constructor(options: { checkpointId: number; location: CheckpointLocation; triggeredAt: number; tasks: readonly TaskId[] }) {
    this.checkpointId = options.checkpointId;
    this.kind = options.location.kind;
    this.location = options.location;
    this.triggeredAt = options.triggeredAt;
    this.#notYetAcknowledged = new Map(options.tasks.map((task) => [keyOf(task), task]));
    this.promise = new Promise<CompletedCheckpoint>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Records a task's acknowledgement; false for a task that already acknowledged or is not part of it. */
  acknowledge(task: TaskId, operators: OperatorSubtaskState[]): boolean {
    const key = keyOf(task);
    if (!this.#notYetAcknowledged.delete(key)) return false;
    this.#acknowledged.set(key, { task, operators });
    return true;
  }

  get isFullyAcknowledged(): boolean {
    return this.#notYetAcknowledged.size === 0;
  }

  /** The tasks that have not acknowledged yet. */
  notYetAcknowledged(): TaskId[] {
    return [...this.#notYetAcknowledged.values()];
  }

  /** Aborts it after `ms` unless it settles before. */
  expireAfter(ms: number, onExpired: () => void): void {
    this.#timeout = setTimeout(onExpired, ms);
  }

  /** The checkpoint's metadata: every operator of the graph with the state handles its subtasks acknowledged. */
  finalize(graph: JobGraph, completedAt: number): CheckpointMetadata {
    const acknowledged = [...this.#acknowledged.values()];
    const operators: OperatorStateMetadata[] = graph.nodes.map((node) => {
      const vertex = graph.vertices.find((candidate) => candidate.nodeIds.includes(node.id));
      const subtasks = acknowledged
        .filter((ack) => ack.task.vertexId === vertex?.id)
        .map((ack) => {
          const operator = ack.operators.find((entry) => entry.uid === node.uid);
          return {
            subtaskIndex: ack.task.subtaskIndex,
            ...(operator?.keyed === undefined ? {} : { keyed: operator.keyed }),
            ...(operator?.keyedChanges === undefined ? {} : { keyedChanges: operator.keyedChanges }),
            ...(operator?.operator === undefined ? {} : { operator: operator.operator }),
          };
        })
        .sort((a, b) => a.subtaskIndex - b.subtaskIndex);
      return { uid: node.uid, name: node.name, parallelism: vertex?.parallelism ?? 1, subtasks };
    });
    operators.push(...channelStateOf(graph, acknowledged));
    return {
      version: metadataVersionFor(operators),
      kind: this.kind,
      jobName: graph.jobName,
      checkpointId: this.checkpointId,
      triggeredAt: this.triggeredAt,
      completedAt,
      maxParallelism: graph.maxParallelism,
      operators,
      properties: {},
    };
  }

  complete(completed: CompletedCheckpoint): void {
    clearTimeout(this.#timeout);
    this.#resolve(completed);
  }

  abort(error: Error): void {
    clearTimeout(this.#timeout);
    this.#reject(error);
  }
}

/**
 * The channel state an unaligned checkpoint's tasks acknowledged (records in flight on their
 * input channels), one entry per task whose subtasks wrote some: its uid names the task's head
 * operator (channel-state-uid.ts), its parallelism is the task's.
 */
function channelStateOf(graph: JobGraph, acknowledged: { task: TaskId; operators: OperatorSubtaskState[] }[]): OperatorStateMetadata[] {
  const byUid = new Map<string, OperatorStateMetadata>();
  for (const ack of acknowledged) {
    for (const entry of ack.operators) {
      const head = channelStateHead(entry.uid);
      if (head === undefined || entry.operator === undefined) continue;
      let state = byUid.get(entry.uid);
      if (state === undefined) {
        const vertex = graph.vertices[ack.task.vertexId];
        const name = graph.nodes.find((node) => node.uid === head)?.name ?? head;
        state = { uid: entry.uid, name: `in-flight records into ${name}`, parallelism: vertex?.parallelism ?? 1, subtasks: [] };
        byUid.set(entry.uid, state);
      }
      state.subtasks.push({ subtaskIndex: ack.task.subtaskIndex, operator: entry.operator });
    }
  }
  const states = [...byUid.values()];
  for (const state of states) state.subtasks.sort((a, b) => a.subtaskIndex - b.subtaskIndex);
  return states;
}
