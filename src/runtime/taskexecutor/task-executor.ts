import type { MessagePort } from 'node:worker_threads';
import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { type LocalRecoveryReads, LocalRecoveryStorage, withLocalRecovery } from '../../checkpoint/storage/local-recovery-storage.ts';
import { openCheckpointStorage } from '../../checkpoint/storage/open-checkpoint-storage.ts';
import { buildStreamGraph } from '../../graph/job.ts';
import { loadJobModule } from '../deployment/job-module.ts';
import type { FromWorker, ToWorker, WorkerInit } from '../deployment/worker-messages.ts';
import { debloatOptions } from '../io/batch-size-debloater.ts';
import type { ChannelMessage } from '../io/channel-message.ts';
import { ChannelWriter } from '../io/channel-writer.ts';
import { RecordWriter } from '../io/record-writer.ts';
import { StreamTask } from '../tasks/stream-task.ts';

/** How often each worker reports its tasks' metrics to the job master. */
export const METRICS_INTERVAL_MS = 1000;

/**
 * The tasks of one worker thread (Flink's TaskExecutor): builds them from the job module, wires
 * their channels (to tasks on this worker directly, to other workers through a MessagePort per
 * worker pair) and relays the checkpoint coordinator's messages.
 */
export class TaskExecutor {
  readonly #init: WorkerInit;
  readonly #peers: Map<number, MessagePort>;
  readonly #toMaster: (message: FromWorker) => void;
  readonly #tasks: StreamTask[] = [];
  readonly #taskOfInput = new Map<number, StreamTask>();
  readonly #writers = new Map<number, ChannelWriter>();
  readonly #local: ChannelMessage[] = [];
  #localScheduled = false;
  #metricsTimer: NodeJS.Timeout | undefined;

  constructor(init: WorkerInit, peers: Map<number, MessagePort>, toMaster: (message: FromWorker) => void) {
    this.#init = init;
    this.#peers = peers;
    this.#toMaster = toMaster;
  }

  #storage: CheckpointStorage | undefined;

  /** With local recovery: what this worker's tasks read from the local copies as they restored, and what from the storage. */
  get localRecoveryReads(): LocalRecoveryReads | undefined {
    return this.#storage instanceof LocalRecoveryStorage ? { ...this.#storage.reads } : undefined;
  }

  /** After start: whether a task's restore left work of the restored snapshot to a later checkpoint. */
  get restoredIncompletely(): boolean {
    return this.#tasks.some((task) => task.restoredIncompletely);
  }

  async start(): Promise<void> {
    const init = this.#init;
    const me = init.workerIndex;
    const job = await loadJobModule(init.jobModuleUrl);
    const storage =
      init.checkpointStorage === undefined ? undefined : withLocalRecovery(openCheckpointStorage(init.checkpointStorage), init.config, init.jobName);
    this.#storage = storage;
    const uids = init.graph.nodes.map((node) => node.uid);

    for (const port of this.#peers.values()) {
      port.on('message', (message: ChannelMessage) => this.#route(message));
    }

    for (const placement of init.plan.placements) {
      if (placement.worker !== me) continue;
      const vertex = init.graph.vertices[placement.vertexId];
      if (vertex === undefined) throw new Error(`unknown vertex ${placement.vertexId}`);
      // Each task builds the graph itself, so function objects (and their closures) are its own.
      const streamGraph = buildStreamGraph(job);
      const inputChannels = init.plan.channels.filter((channel) => channel.targetVertex === vertex.id && channel.targetSubtask === placement.subtaskIndex);
      let task: StreamTask | undefined;
      const onCredit = () => task?.onCredit();
      const recordWriters = init.graph.edges
        .filter((edge) => edge.source === vertex.id)
        .map((edge) => {
          const channels = init.plan.channels
            .filter((channel) => channel.edgeId === edge.id && channel.sourceSubtask === placement.subtaskIndex)
            .sort((a, b) => a.targetSubtask - b.targetSubtask);
          const writers = channels.map((channel) => {
            const writer = new ChannelWriter(
              channel.id,
              channel.targetSubtask,
              init.config.channelCredits,
              this.#transportTo(channel.targetWorker),
              onCredit,
              debloatOptions(init.config),
            );
            this.#writers.set(channel.id, writer);
            return writer;
          });
          const streamEdge = streamGraph.edges[edge.streamEdge];
          return new RecordWriter({
            writers,
            partitioning: edge.partitioning,
            keySelector: streamEdge?.keySelector,
            maxParallelism: init.config.maxParallelism,
            operatorName: vertex.name,
            subtaskIndex: placement.subtaskIndex,
            outputTag: edge.outputTag,
          });
        });
      const sourceWorkerOf = new Map(inputChannels.map((channel) => [channel.id, channel.sourceWorker]));
      task = new StreamTask({
        jobName: init.jobName,
        config: init.config,
        vertex,
        subtaskIndex: placement.subtaskIndex,
        attemptNumber: init.attemptNumber,
        streamGraph: streamGraph,
        uids,
        restore: init.restore,
        storage,
        inputChannels: inputChannels.map((channel) => channel.id),
        inputIndexOf: new Map(inputChannels.map((channel) => [channel.id, init.graph.edges[channel.edgeId]?.inputIndex ?? 0])),
        recordWriters,
        returnCredit: (channelId) => this.#transportTo(sourceWorkerOf.get(channelId) as number)({ kind: 'credit', channel: channelId, credits: 1 }),
        toMaster: this.#toMaster,
      });
      for (const channel of inputChannels) this.#taskOfInput.set(channel.id, task);
      this.#tasks.push(task);
    }
    // Concurrently: a task's open waits on its connectors (a Kafka sink's fencing and recovery, a
    // source's metadata), and one after another they added up to a restart's longest wait.
    const opened = await Promise.allSettled(this.#tasks.map((task) => task.open()));
    const failed = opened.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /** Starts the tasks' loops: call once every worker has opened its tasks. */
  run(): void {
    for (const task of this.#tasks) task.start();
    this.#metricsTimer = setInterval(() => this.reportMetrics(), METRICS_INTERVAL_MS);
    this.#metricsTimer.unref();
  }

  /** Sends every task's metrics to the job master. */
  reportMetrics(): void {
    const now = Date.now();
    this.#toMaster({ type: 'metrics', tasks: this.#tasks.map((task) => task.metrics.snapshot(task.env.vertex.id, task.env.subtaskIndex, now)) });
  }

  handle(message: ToWorker): void {
    switch (message.type) {
      case 'run':
        this.run();
        return;
      case 'trigger':
        for (const task of this.#tasks) if (task.env.vertex.isSource) task.triggerCheckpoint(message.location, message.stop);
        return;
      case 'complete':
        for (const task of this.#tasks) task.notifyCheckpointComplete(message.checkpointId);
        return;
      case 'abort':
        for (const task of this.#tasks) task.notifyCheckpointAborted(message.checkpointId);
        return;
      case 'finish':
        void this.close().then(() => this.#toMaster({ type: 'finished', workerIndex: this.#init.workerIndex }));
        return;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.#metricsTimer);
    for (const task of this.#tasks) await task.close();
    this.reportMetrics(); // the final counts (a bounded job's totals)
    for (const port of this.#peers.values()) port.close();
  }

  #route(message: ChannelMessage): void {
    if (message.kind === 'credit') {
      this.#writers.get(message.channel)?.addCredit(message.credits);
      return;
    }
    this.#taskOfInput.get(message.channel)?.deliver(message);
  }

  #transportTo(worker: number): (message: ChannelMessage) => void {
    if (worker === this.#init.workerIndex) {
      return (message) => {
        this.#local.push(message);
        if (!this.#localScheduled) {
          this.#localScheduled = true;
          setImmediate(() => {
            this.#localScheduled = false;
            const messages = this.#local.splice(0);
            for (const queued of messages) this.#route(queued);
          });
        }
      };
    }
    const port = this.#peers.get(worker);
    if (port === undefined) throw new Error(`no port to worker ${worker}`);
    return (message) => port.postMessage(message);
  }
}
