import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { resolveKafkaConnection } from '../connectors/kafka/kafka-default-connection.ts';
import { hasKafkaError } from '../connectors/kafka/kafka-error-ids.ts';
import { brokerTransactionMaxTimeout } from '../connectors/kafka/kafka-preflight.ts';
import { readTopic } from '../connectors/kafka/topic-reader.ts';
import { type OpenTransaction, TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import type { EnvironmentConfig } from '../core/config/environment-config.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { Logger } from '../core/logging/logger.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { RunJobOptions } from '../runtime/jobmaster/job-client.ts';
import { loadJob } from '../runtime/jobmaster/load-job.ts';
import type { TaskMetricsSnapshot } from '../runtime/metrics/task-metrics.ts';
import { clusterSettings, planCluster } from './cluster-plan.ts';
import { type ClusterStatus, readClusterStatus } from './cluster-status.ts';
import { ClusterTask, type MemberRuntime } from './cluster-task.ts';
import { ensureClusterTopics } from './cluster-topics.ts';
import { GroupMembership } from './group-membership.ts';
import { ControlReader, ensureControlTopic } from './savepoint-control.ts';
import { clusterStartingSavepoint } from './savepoint-restore.ts';
import type { Stage } from './stage-plan.ts';
import { latestTaskCheckpoints, type TaskCheckpoint, taskCheckpointKey } from './task-checkpoint.ts';
import {
  describeTaskTransactionTimeout,
  refuseShortTransactionTimeout,
  restoreReadTimeoutMs,
  taskTransactionTimeoutMs,
  timedOutByBroker,
} from './task-transaction-timeout.ts';
import { legacyTaskTransactionalId, taskTransactionalId } from './task-transactional-id.ts';
import { transactionTimedOut } from './transaction-timed-out.ts';

/** The job and its settings, whose `cluster` (id, instanceId, sessionTimeout) makes this process a member. */
export interface ClusterMemberOptions extends Pick<RunJobOptions, 'job' | 'config' | 'configFile' | 'fromSavepoint'> {
  log: Logger;
}

type ClusterSettings = NonNullable<EnvironmentConfig['cluster']>;

/** One task as its member holds it. */
interface TaskEntry {
  /** Its number in the group's assignment (over every stage). */
  global: number;
  stage: Stage;
  task: number;
  run: ClusterTask | undefined;
  /** Revoked (or the member closes): whatever is under way for it stops. */
  revoked: boolean;
  /** Fenced by a newer owner: it waits for the next assignment rather than fence that owner back. */
  fenced: boolean;
  failures: number;
  /** The producer (id and epoch) its current run writes with: every transaction of the run has them. */
  producer: Pick<OpenTransaction, 'transactionalId' | 'producerId' | 'producerEpoch'> | undefined;
  /** The group generation its latest commit carried (KIP-447): a commit the group refuses was refused for that generation. */
  committedWith: number | undefined;
}

/**
 * One member of a cluster-mode job (`weir run --cluster <id>`): it plans the job's stages and
 * topics (creating those missing), joins the cluster's consumer group, and runs the tasks the
 * group assigns it, each a {@link ClusterTask}. A task assigned is fenced from its old owner
 * (InitProducerId on its transactional id) before its latest committed checkpoint is read, so
 * that checkpoint is final; a task revoked stops at once. A task that fails starts again from its
 * latest checkpoint after a back-off, unless a newer owner fenced it (then it waits for the group).
 */
export class ClusterMember {
  readonly #options: ClusterMemberOptions & ClusterSettings;
  readonly #runtime: MemberRuntime;
  readonly #membership: GroupMembership;
  readonly #entries = new Map<number, TaskEntry>();
  /** Global task number -> stage and task. */
  readonly #tasks: { stage: Stage; task: number }[];
  #closed = false;

  private constructor(options: ClusterMemberOptions & ClusterSettings, runtime: MemberRuntime, tasks: { stage: Stage; task: number }[]) {
    this.#options = options;
    this.#runtime = runtime;
    this.#tasks = tasks;
    const session = options.sessionTimeout;
    this.#membership = new GroupMembership(runtime.connections, {
      groupId: options.id,
      taskCount: tasks.length,
      taskNames: tasks.map(({ stage, task }) => taskCheckpointKey(stage.uid, task)),
      instanceId: options.instanceId,
      sessionTimeoutMs: session,
      rebalanceTimeoutMs: session,
      onChange: (change) => this.#onChange(change.assigned, change.revoked, change.tasks),
      log: runtime.log,
    });
  }

  /** Plans the job, creates its topics and joins the group; resolves once the member has started (its tasks start as they are assigned). */
  static async start(memberOptions: ClusterMemberOptions): Promise<ClusterMember> {
    const log = (line: string) => memberOptions.log.info(line);
    const { job, config, streamGraph, graph } = await loadJob(memberOptions);
    const { cluster, checkpointing } = clusterSettings(config, graph.jobName);
    const options = { ...memberOptions, ...cluster };
    const { plan, taskCounts, tasks, topics } = await planCluster({ streamGraph, graph }, options.id);
    const kafka = resolveKafkaConnection({}, 'cluster mode (--cluster)');
    const connections = new ClusterConnections(kafka.bootstrap, { clientId: 'weir-cluster', ...kafka.connection, owner: `cluster "${options.id}"` });
    try {
      const created = new Set(await ensureClusterTopics(connections, kafka.bootstrap, kafka.connection, topics));
      await ensureControlTopic(connections, kafka.bootstrap, kafka.connection, options.id);
      for (const stage of plan.stages) log(`cluster "${options.id}": stage "${stage.uid}", ${taskCounts[stage.id]} tasks`);
      for (const topic of topics)
        log(`cluster "${options.id}": ${topic.what}: topic ${topic.topic}, ${topic.partitions} partitions${created.has(topic.topic) ? ' (created)' : ''}`);
    } catch (error) {
      await connections.close();
      throw error;
    }
    const brokerMax = await brokerTransactionMaxTimeout(kafka.bootstrap, kafka.connection).catch(async (error: unknown) => {
      await connections.close();
      throw error;
    });
    const transactionTimeoutMs = taskTransactionTimeoutMs(brokerMax, checkpointing.interval);
    const tooShort = refuseShortTransactionTimeout(brokerMax, checkpointing.interval, transactionTimeoutMs);
    if (tooShort !== undefined) {
      await connections.close();
      throw tooShort;
    }
    log(`cluster "${options.id}": ${describeTaskTransactionTimeout(transactionTimeoutMs)}`);
    const driver = new TransactionDriver(connections, { transactionTimeoutMs });
    const fromSavepoint = await clusterStartingSavepoint({
      cluster: options.id,
      graph,
      path: memberOptions.fromSavepoint,
      bootstrap: kafka.bootstrap,
      connection: kafka.connection,
      checkpointTopic: plan.checkpointTopic,
      timeoutMs: restoreReadTimeoutMs(transactionTimeoutMs),
      log,
    }).catch(async (error: unknown) => {
      await connections.close();
      throw error;
    });
    const savepoints = new ControlReader(connections, options.id, log);
    let member: ClusterMember | undefined;
    const runtime: MemberRuntime = {
      clusterId: options.id,
      job,
      config: { ...config, checkpointing },
      graph,
      plan,
      taskCounts,
      connections,
      driver,
      bootstrap: kafka.bootstrap,
      connection: kafka.connection,
      owner: () => {
        const membership = (member as ClusterMember).#membership;
        return { groupId: options.id, generationId: membership.generation, memberId: membership.memberId, groupInstanceId: options.instanceId ?? null };
      },
      log,
      savepoints,
      fromSavepoint,
    };
    member = new ClusterMember(options, runtime, tasks);
    member.#membership.start();
    return member;
  }

  /** Rejects when the membership cannot go on (another member under this instance id, a different job under this cluster id). */
  get failed(): Promise<never> {
    return this.#membership.failed;
  }

  /** The job's graph with each vertex at its stage's task count (what the dashboard draws). */
  get graph(): JobGraph {
    const { graph, plan, taskCounts } = this.#runtime;
    const stageOf = new Map(plan.stages.flatMap((stage) => stage.vertices.map((vertex) => [vertex, stage.id] as const)));
    return { ...graph, vertices: graph.vertices.map((vertex) => ({ ...vertex, parallelism: taskCounts[stageOf.get(vertex.id) as number] as number })) };
  }

  get config(): EnvironmentConfig {
    return this.#runtime.config;
  }

  /** The task failures of this member (each one's task started again, or waits for the group), the latest last. */
  readonly failures: { at: number; task: string; message: string; stack: string | undefined }[] = [];

  /** Every running task's metrics, and the checkpoints they committed. */
  taskMetrics(now: number): { snapshots: TaskMetricsSnapshot[]; completed: number; latestCheckpointId: number | undefined } {
    const snapshots: TaskMetricsSnapshot[] = [];
    let completed = 0;
    let latestCheckpointId: number | undefined;
    for (const entry of this.#entries.values()) {
      const snapshot = entry.run?.metrics(now);
      if (snapshot !== undefined) snapshots.push(snapshot);
      completed += entry.run?.completed ?? 0;
      const id = entry.run?.latest?.checkpointId;
      if (id !== undefined) latestCheckpointId = Math.max(latestCheckpointId ?? 0, id);
    }
    return { snapshots, completed, latestCheckpointId };
  }

  /** The cluster as Kafka holds it (every member's tasks, each task's last checkpoint and lag). */
  clusterStatus(): Promise<ClusterStatus> {
    return readClusterStatus(this.#runtime.connections, this.#runtime.bootstrap, this.#options.id);
  }

  /** Why this member is not ready now (readiness answers 503 with it), else undefined: it is out of its group until it has joined again. */
  notReady(): string | undefined {
    if (this.#membership.inGroup) return undefined;
    return `this member is not in the group of cluster "${this.#options.id}" (joining${this.#membership.generation < 0 ? '' : ' again'})`;
  }

  /** The cluster's id. */
  get id(): string {
    return this.#options.id;
  }

  /** Resolves with the savepoint id once a stopping savepoint of the cluster is done (`weir stop --cluster`): the member leaves. */
  get stopped(): Promise<number> {
    return (this.#runtime.savepoints as ControlReader).stopped;
  }

  /** Leaves the group: every task stops (its open transaction aborted) and goes to the other members. */
  async close(): Promise<void> {
    this.#closed = true;
    await (this.#runtime.savepoints as ControlReader).close();
    await this.#membership.close();
    await this.#runtime.connections.close();
  }

  async #onChange(assigned: number[], revoked: number[], tasks: number[]): Promise<void> {
    await Promise.all(
      revoked.map(async (global) => {
        const entry = this.#entries.get(global);
        if (entry === undefined) return;
        entry.revoked = true;
        this.#entries.delete(global);
        await entry.run?.stop();
        entry.run = undefined;
      }),
    );
    const starting: TaskEntry[] = [];
    for (const global of assigned) {
      const { stage, task } = this.#tasks[global] as { stage: Stage; task: number };
      const entry: TaskEntry = {
        global,
        stage,
        task,
        run: undefined,
        revoked: false,
        fenced: false,
        failures: 0,
        producer: undefined,
        committedWith: undefined,
      };
      this.#entries.set(global, entry);
      starting.push(entry);
    }
    // Still ours in the new generation: a task fenced in the old one starts again.
    for (const global of tasks) {
      const entry = this.#entries.get(global);
      if (entry?.fenced === true) {
        entry.fenced = false;
        starting.push(entry);
      }
    }
    // Said at every new share, one that only lost tasks too (a member joined): its tasks in this generation.
    if (starting.length > 0 || (revoked.length > 0 && tasks.length > 0))
      this.#runtime.log(`cluster "${this.#options.id}": generation ${this.#membership.generation}, ${tasks.length} tasks: ${this.#describe(tasks)}`);
    if (starting.length > 0) void this.#startTasks(starting);
  }

  #describe(tasks: readonly number[]): string {
    return tasks.map((global) => `${this.#tasks[global]?.stage.uid}/${this.#tasks[global]?.task}`).join(', ');
  }

  /** Fences each task's old owner, reads the tasks' latest checkpoints once, and starts them. */
  async #startTasks(entries: TaskEntry[]): Promise<void> {
    const { driver, plan, bootstrap, connection } = this.#runtime;
    const opens = await Promise.all(
      entries.map(async (entry) => {
        try {
          // The id an older Weir gave the task is fenced too (a member not yet upgraded that owned it
          // cannot commit after the task moved); nothing is written under it.
          const [open] = await Promise.all([
            driver.initTransaction(taskTransactionalId(this.#options.id, entry.stage, entry.task)),
            driver.abortLingering(legacyTaskTransactionalId(this.#options.id, entry.stage, entry.task)),
          ]);
          return open;
        } catch (error) {
          return error as Error;
        }
      }),
    );
    let checkpoints: Map<string, TaskCheckpoint>;
    try {
      // Read after the fencing: whatever the old owners left open is aborted, so the latest committed
      // record is final. The read waits behind other tasks' open transactions, each open at most
      // the transaction timeout: so may the read.
      const timeoutMs = restoreReadTimeoutMs(driver.transactionTimeoutMs);
      checkpoints = latestTaskCheckpoints(await readTopic({ bootstrap, connection, topic: plan.checkpointTopic, timeoutMs }), plan.checkpointTopic);
    } catch (error) {
      for (const entry of entries) this.#taskFailed(entry, error);
      return;
    }
    await Promise.all(
      entries.map(async (entry, index) => {
        const open = opens[index] as OpenTransaction | Error;
        if (open instanceof Error) return this.#taskFailed(entry, open);
        if (entry.revoked || this.#closed) return;
        entry.producer = open;
        const restored = checkpoints.get(taskCheckpointKey(entry.stage.uid, entry.task));
        const run = new ClusterTask(this.#taskRuntime(entry), entry.stage, entry.task, restored, (error) => this.#taskFailed(entry, error));
        entry.run = run;
        try {
          await run.start(open);
        } catch (error) {
          return this.#taskFailed(entry, error);
        }
        if (entry.revoked || this.#closed) {
          await run.stop();
          return;
        }
        this.#runtime.log(
          `${run.name} started ${restored === undefined ? 'fresh' : `from checkpoint ${restored.checkpointId} (state ${run.restoredBytes} bytes, opened in ${run.restoreMs.toFixed(0)} ms)`}`,
        );
      }),
    );
  }

  /** The member's runtime as one task sees it: the generation each of its commits carries is noted on its entry. */
  #taskRuntime(entry: TaskEntry): MemberRuntime {
    const runtime = this.#runtime;
    return {
      ...runtime,
      owner: () => {
        const owner = runtime.owner();
        entry.committedWith = owner.generationId;
        return owner;
      },
    };
  }

  /**
   * A task fenced by the group rather than by a newer owner (its commit carried the generation a
   * rebalance was replacing: ILLEGAL_GENERATION) is still this member's once a generation newer
   * than `generation` keeps it here (at once when the member holds one already): it starts again
   * then. One fenced by a newer owner is revoked by that generation instead. Should no new
   * generation come within two session timeouts, the group still says it is ours: it starts again too.
   */
  async #restartWhenSettled(entry: TaskEntry, generation: number): Promise<void> {
    const deadline = Date.now() + 2 * this.#options.sessionTimeout;
    while (!this.#closed && !entry.revoked && entry.fenced && this.#membership.generation <= generation && Date.now() < deadline) await sleep(200);
    if (this.#closed || entry.revoked || !entry.fenced || this.#entries.get(entry.global) !== entry) return;
    if (!this.#membership.tasks.includes(entry.global)) return;
    entry.fenced = false;
    void this.#startTasks([entry]);
  }

  #taskFailed(entry: TaskEntry, error: unknown): void {
    const run = entry.run;
    entry.run = undefined;
    void run?.stop();
    if (entry.revoked || this.#closed) return;
    const message = error instanceof Error ? error.message : String(error);
    this.failures.push({ at: Date.now(), task: `${entry.stage.uid}/${entry.task}`, message, stack: error instanceof Error ? error.stack : undefined });
    if (this.failures.length > 100) this.failures.shift();
    if (error instanceof WeirError && error.code === 'TASK_FENCED') {
      entry.fenced = true;
      // The group refused its commit (ILLEGAL_GENERATION: a rebalance replaced the generation it
      // carried): a newer generation than that one settles it, even one this member holds already
      // (it kept the task there while the commit was under way). A producer fenced by a newer
      // owner waits for a generation newer than the member's.
      const current = this.#membership.generation;
      const byGroup = hasKafkaError(error, 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID');
      void this.#onFenced(entry, error, byGroup ? Math.min(entry.committedWith ?? current, current) : current, byGroup);
      return;
    }
    this.#restartLater(entry, message);
  }

  /**
   * A task answered "fenced". Either a newer owner fenced it (it waits for the group, which
   * revokes it) or the broker timed its transaction out and aborted it (bumping its epoch), which
   * is answered the same. A task this member still owns in the group's current generation whose
   * transaction the broker timed out (transaction-timed-out.ts) starts again from its latest
   * checkpoint at once, said loudly: nobody else will start it.
   */
  async #onFenced(entry: TaskEntry, error: WeirError, generation: number, byGroup: boolean): Promise<void> {
    const producer = entry.producer;
    const owned = () => this.#membership.tasks.includes(entry.global) && this.#entries.get(entry.global) === entry && !entry.revoked && !this.#closed;
    const timedOut = !byGroup && producer !== undefined && owned() && (await transactionTimedOut(this.#runtime.driver, producer).catch(() => false));
    if (timedOut && owned() && entry.fenced) {
      entry.fenced = false;
      const cause = timedOutByBroker(`${entry.stage.uid} task ${entry.task}`, this.#runtime.driver.transactionTimeoutMs, error);
      this.failures.push({ at: Date.now(), task: `${entry.stage.uid}/${entry.task}`, message: cause.message, stack: cause.stack });
      this.#restartLater(entry, `${cause.message}. ${cause.hint}`);
      return;
    }
    this.#runtime.log(
      byGroup && this.#membership.generation > generation
        ? `${entry.stage.uid} task ${entry.task} was fenced (${error.message}); its commit carried generation ${generation}, and it is still this member's in generation ${this.#membership.generation}: it starts again from its latest checkpoint`
        : `${entry.stage.uid} task ${entry.task} was fenced (${error.message}); it waits for the group's next assignment`,
    );
    await this.#restartWhenSettled(entry, generation);
  }

  /** Starts a failed task again from its latest checkpoint after a back-off (1 s doubling to 30 s). */
  #restartLater(entry: TaskEntry, message: string): void {
    entry.failures++;
    const delay = Math.min(30_000, 1000 * 2 ** Math.min(entry.failures - 1, 5));
    this.#options.log.warn(`${entry.stage.uid} task ${entry.task} failed (${message}); it starts again from its latest checkpoint in ${delay} ms`);
    void sleep(delay).then(() => {
      if (!entry.revoked && !this.#closed && this.#entries.get(entry.global) === entry) void this.#startTasks([entry]);
    });
  }
}
