import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { hasKafkaError } from '../connectors/kafka/kafka-error-ids.ts';
import type { OffsetsOwner } from '../connectors/kafka/offsets-owner.ts';
import { connectorDefaults } from '../core/config/connector-defaults.ts';
import type { EnvironmentConfig } from '../core/config/environment-config.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { JobGraph } from '../graph/job-graph.ts';
import type { TaskMetricsSnapshot } from '../runtime/metrics/task-metrics.ts';
import { ClusterEndWatch } from './cluster-end-watch.ts';
import { type ClusterStatus, readClusterStatus } from './cluster-status.ts';
import { fenceAndRead } from './fence-and-read.ts';
import { GroupMembership } from './group-membership.ts';
import { type ClusterMemberOptions, type MemberSetup, setUpMember } from './member-setup.ts';
import type { FailureDetail, RemoteTask } from './remote-task.ts';
import { restartCheckpoint } from './restart-checkpoint.ts';
import { ControlReader } from './savepoint-control.ts';
import type { Stage } from './stage-plan.ts';
import { taskCheckpointKey } from './task-checkpoint.ts';
import { type TaskEntry, taskEntry } from './task-entry.ts';
import { TaskThreads } from './task-threads.ts';
import { timedOutByBroker } from './task-transaction-timeout.ts';
import { transactionTimedOut } from './transaction-timed-out.ts';

export type { ClusterMemberOptions } from './member-setup.ts';

/** Tasks that start again within this long of each other start together (one read of the checkpoint topic). */
const RESTART_BATCH_MS = 50;

/**
 * One member of a cluster-mode job (`weir run --cluster <id>`): it plans the job's stages and
 * topics (creating those missing), joins the cluster's consumer group, and runs the tasks the
 * group assigns it, each a {@link ClusterTask} on one of its task threads (task-threads.ts:
 * `cluster.threads` worker threads, each loading the job, on its own Kafka connections). The main
 * thread keeps the membership, the fencing and the REST side: a task assigned is fenced from its
 * old owner (InitProducerId on its transactional id) before its latest committed checkpoint is
 * read, so that checkpoint is final; a task revoked stops at once. A task that fails starts again
 * from its latest checkpoint after a back-off, unless a newer owner fenced it (then it waits for
 * the group). Every generation the member joins reaches its threads before the tasks it brings.
 */
export class ClusterMember {
  readonly #options: MemberSetup['options'];
  readonly #setup: MemberSetup;
  readonly #membership: GroupMembership;
  readonly #groupConnections: ClusterConnections;
  readonly #threads: TaskThreads;
  readonly #savepoints: ControlReader;
  /** Bounded input: whether every task of the cluster has ended. */
  readonly #endWatch: ClusterEndWatch;
  readonly #entries = new Map<number, TaskEntry>();
  /** Global task number -> stage and task. */
  readonly #tasks: { stage: Stage; task: number }[];
  #closed = false;
  /** Tasks starting again soon, together (#startSoon). */
  readonly #restarting = new Set<TaskEntry>();
  #restartTimer: NodeJS.Timeout | undefined;

  private constructor(setup: MemberSetup) {
    const { options, tasks, connections, log } = setup;
    this.#options = options;
    this.#setup = setup;
    this.#tasks = tasks;
    this.#savepoints = new ControlReader(connections, options.id, log);
    this.#endWatch = new ClusterEndWatch({
      clusterId: options.id,
      checkpointTopic: setup.plan.checkpointTopic,
      tasks: tasks.map(({ stage, task }) => taskCheckpointKey(stage.uid, task)),
      bounded: setup.bounded,
      connections,
    });
    this.#threads = new TaskThreads({
      threads: options.threads,
      init: {
        clusterId: options.id,
        jobModuleUrl: setup.url,
        config: setup.config,
        graph: setup.graph,
        plan: setup.plan,
        taskCounts: setup.taskCounts,
        transactionTimeoutMs: setup.driver.transactionTimeoutMs,
        fromSavepoint: setup.fromSavepoint,
        connectorDefaults: connectorDefaults(),
      },
      owner: { groupId: options.id, generationId: -1, memberId: '', groupInstanceId: options.instanceId ?? null },
      control: this.#savepoints,
      log,
      warn: (line) => options.log.warn(line),
    });
    log(`cluster "${options.id}": this member runs its tasks on ${options.threads} task threads (cluster.threads)`);
    const session = options.sessionTimeout;
    // The group's requests on connections of their own, as Kafka's consumer gives its coordinator one:
    // a broker answers one request per connection at a time, so a JoinGroup held until every member
    // rejoins would hold the fencing of restarting tasks behind it, and those a heartbeat.
    this.#groupConnections = new ClusterConnections(setup.bootstrap, { clientId: 'weir-cluster', ...setup.connection, owner: `cluster "${options.id}"` });
    this.#membership = new GroupMembership(this.#groupConnections, {
      groupId: options.id,
      taskCount: tasks.length,
      taskNames: tasks.map(({ stage, task }) => taskCheckpointKey(stage.uid, task)),
      instanceId: options.instanceId,
      sessionTimeoutMs: session,
      rebalanceTimeoutMs: session,
      onChange: (change) => this.#onChange(change.assigned, change.revoked, change.tasks),
      log,
    });
  }

  /** Plans the job, creates its topics, starts its task threads and joins the group; resolves once the member has started (its tasks start as they are assigned). */
  static async start(memberOptions: ClusterMemberOptions): Promise<ClusterMember> {
    const member = new ClusterMember(await setUpMember(memberOptions));
    member.#membership.start();
    return member;
  }

  /** The member in the group now (its generation), for the offsets each task's checkpoint commits. */
  #owner(): OffsetsOwner {
    const membership = this.#membership;
    return { groupId: this.#options.id, generationId: membership.generation, memberId: membership.memberId, groupInstanceId: this.#options.instanceId ?? null };
  }

  /** Rejects when the membership cannot go on (another member under this instance id, a different job under this cluster id). */
  get failed(): Promise<never> {
    return this.#membership.failed;
  }

  /** The job's graph with each vertex at its stage's task count (what the dashboard draws). */
  get graph(): JobGraph {
    const { graph, plan, taskCounts } = this.#setup;
    const stageOf = new Map(plan.stages.flatMap((stage) => stage.vertices.map((vertex) => [vertex, stage.id] as const)));
    return { ...graph, vertices: graph.vertices.map((vertex) => ({ ...vertex, parallelism: taskCounts[stageOf.get(vertex.id) as number] as number })) };
  }

  get config(): EnvironmentConfig {
    return this.#setup.config;
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
      const id = entry.run?.latestCheckpointId;
      if (id !== undefined) latestCheckpointId = Math.max(latestCheckpointId ?? 0, id);
    }
    return { snapshots, completed, latestCheckpointId };
  }

  /** The cluster as Kafka holds it (every member's tasks, each task's last checkpoint and lag). */
  clusterStatus(): Promise<ClusterStatus> {
    return readClusterStatus(this.#setup.connections, this.#setup.bootstrap, this.#options.id);
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
    return this.#savepoints.stopped;
  }

  /** Resolves once every task of the cluster has ended (bounded input: each committed its final checkpoint): the member leaves. */
  get ended(): Promise<void> {
    return this.#endWatch.ended;
  }

  /** Leaves the group: every task stops (its open transaction aborted) and goes to the other members. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#endWatch.close();
    await this.#savepoints.close();
    await this.#membership.close();
    await this.#threads.close();
    await this.#groupConnections.close();
    await this.#setup.connections.close();
  }

  async #onChange(assigned: number[], revoked: number[], tasks: number[]): Promise<void> {
    // The tasks revoked are told to stop before their threads learn the generation (a run told to
    // stop keeps its generation: none of its commits carries the one that revoked it). Then every
    // commit carries the new one (a commit under way carries the one before and is refused if the
    // group moved on: its task starts again).
    const stopping = revoked.map((global) => {
      const entry = this.#entries.get(global);
      if (entry === undefined) return undefined;
      entry.revoked = true;
      this.#entries.delete(global);
      this.#threads.forget(taskCheckpointKey(entry.stage.uid, entry.task));
      const run = entry.run;
      entry.run = undefined;
      return run?.stop();
    });
    this.#threads.setOwner(this.#owner());
    await Promise.all(stopping);
    const starting: TaskEntry[] = [];
    for (const global of assigned) {
      const { stage, task } = this.#tasks[global] as { stage: Stage; task: number };
      const entry = taskEntry(global, stage, task, this.#membership.generation);
      this.#entries.set(global, entry);
      starting.push(entry);
    }
    // Still ours in the new generation: a task fenced in the old one starts again (one the group
    // refused, from #restartWhenSettled, which sees this generation).
    for (const global of tasks) {
      const entry = this.#entries.get(global);
      if (entry?.fenced === true && entry.refused === undefined) {
        entry.fenced = false;
        starting.push(entry);
      }
    }
    // Said at every new share, one that only lost tasks too (a member joined): its tasks in this generation.
    if (starting.length > 0 || (revoked.length > 0 && tasks.length > 0))
      this.#setup.log(`cluster "${this.#options.id}": generation ${this.#membership.generation}, ${tasks.length} tasks: ${this.#describe(tasks)}`);
    if (starting.length > 0) void this.#startTasks(starting);
  }

  #describe(tasks: readonly number[]): string {
    return tasks.map((global) => `${this.#tasks[global]?.stage.uid}/${this.#tasks[global]?.task}`).join(', ');
  }

  /**
   * Starts a task again with the others starting again within RESTART_BATCH_MS (a rebalance
   * refuses the commits of many tasks at once): one read of the checkpoint topic for them all.
   */
  #startSoon(entry: TaskEntry): void {
    this.#restarting.add(entry);
    this.#restartTimer ??= setTimeout(() => {
      const batch = [...this.#restarting].filter((each) => !each.revoked && !this.#closed && this.#entries.get(each.global) === each);
      this.#restarting.clear();
      this.#restartTimer = undefined;
      if (batch.length > 0) void this.#startTasks(batch);
    }, RESTART_BATCH_MS);
  }

  /**
   * Fences each task's old owner, reads the tasks' latest checkpoints once (but for tasks that
   * start again from the checkpoint they are known to have last committed: restart-checkpoint.ts),
   * and starts them.
   */
  async #startTasks(entries: TaskEntry[]): Promise<void> {
    // A failed run stops first (its two-phase-commit sink must not prepare beside its successor's),
    // for at most a session timeout: fencing then shuts its Kafka side regardless.
    const stopping = entries.map((entry) => entry.stopping).filter((stop) => stop !== undefined);
    if (stopping.length > 0) await Promise.race([Promise.all(stopping), sleep(this.#options.sessionTimeout)]);
    for (const entry of entries) entry.stopping = undefined;
    const starts = await fenceAndRead(this.#setup, this.#options.id, entries);
    await Promise.all(
      entries.map(async (entry, index) => {
        const { open, restored } = starts[index] as (typeof starts)[number];
        const known = entry.known !== undefined;
        entry.known = undefined;
        if (open instanceof Error) return this.#taskFailed(entry, open);
        if (restored instanceof Error) return this.#taskFailed(entry, restored);
        if (entry.revoked || this.#closed) return;
        entry.producer = open;
        const name = `${entry.stage.uid} task ${entry.task}`;
        const start = { stage: entry.stage.uid, task: entry.task, restored };
        const run: RemoteTask = this.#threads.task(taskCheckpointKey(entry.stage.uid, entry.task), name, start, (error, detail) =>
          this.#taskFailed(entry, error, run, detail),
        );
        entry.run = run;
        try {
          await run.start(open);
        } catch (error) {
          return this.#taskFailed(entry, error, run);
        }
        if (entry.revoked || this.#closed) {
          await run.stop();
          return;
        }
        // An ended task does not run: it said so itself ("it stays ended").
        if (restored?.ended === true) return;
        this.#setup.log(
          `${run.name} started ${restored === undefined ? 'fresh' : `from checkpoint ${restored.checkpointId}${known ? ', its own latest (the checkpoint topic not read),' : ''} (state ${run.restoredBytes} bytes, opened in ${run.restoreMs.toFixed(0)} ms)`} on task thread ${run.thread}`,
        );
      }),
    );
  }

  /**
   * A task fenced by the group rather than by a newer owner (its commit carried the generation a
   * rebalance was replacing: ILLEGAL_GENERATION) is still this member's once a generation newer
   * than `generation` keeps it here (at once when the member holds one already): it starts again
   * then. One fenced by a newer owner is revoked by that generation instead. Should no new
   * generation come within two session timeouts, the group still says it is ours: it starts again too.
   * One the group refused starts at once, without reading the checkpoint topic, when what its run
   * last committed is provably its latest record (restart-checkpoint.ts).
   */
  async #restartWhenSettled(entry: TaskEntry, generation: number): Promise<void> {
    const deadline = Date.now() + 2 * this.#options.sessionTimeout;
    while (!this.#closed && !entry.revoked && entry.fenced && this.#membership.generation <= generation && Date.now() < deadline) await sleep(50);
    await entry.refused?.run.stop(); // stopped: its latest is final, its transaction aborted (no InitProducerId retried behind that abort)
    if (this.#closed || entry.revoked || !entry.fenced || this.#entries.get(entry.global) !== entry) return;
    if (!this.#membership.tasks.includes(entry.global)) return;
    entry.fenced = false;
    const { generation: current, unbrokenSince } = this.#membership;
    const refused = entry.refused;
    entry.refused = undefined;
    const known =
      refused === undefined
        ? undefined
        : restartCheckpoint({
            stoppedWith: refused.run.stoppedWith,
            refusedIn: refused.generation,
            assignedIn: entry.assignedIn,
            generation: current,
            unbrokenSince,
          });
    entry.known = known?.checkpoint;
    if (known === undefined) this.#startSoon(entry);
    else void this.#startTasks([entry]); // no read to share with others
  }

  /** A task failed (`failed`: the run that did, once; a run failed before is left alone), or failed to start. */
  #taskFailed(entry: TaskEntry, error: unknown, failed?: RemoteTask, detail?: FailureDetail): void {
    if (failed !== undefined && entry.run !== failed) return;
    if (detail?.committedWith !== undefined) entry.committedWith = detail.committedWith;
    const run = entry.run;
    entry.run = undefined;
    entry.refused = undefined;
    entry.known = undefined;
    entry.stopping = run?.stop().catch(() => {});
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
      const byGroup = detail?.byGroup === true || hasKafkaError(error, 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID');
      const generation = byGroup ? Math.min(entry.committedWith ?? current, current) : current;
      // Only a refusal its thread reported (detail: after the refused commit's TxnOffsetCommit) may restart from what the run committed.
      if (byGroup && run !== undefined && detail?.byGroup === true && entry.committedWith !== undefined)
        entry.refused = { run, generation: entry.committedWith };
      void this.#onFenced(entry, error, generation, byGroup);
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
    const timedOut = !byGroup && producer !== undefined && owned() && (await transactionTimedOut(this.#setup.driver, producer).catch(() => false));
    if (timedOut && owned() && entry.fenced) {
      entry.fenced = false;
      const cause = timedOutByBroker(`${entry.stage.uid} task ${entry.task}`, this.#setup.driver.transactionTimeoutMs, error);
      this.failures.push({ at: Date.now(), task: `${entry.stage.uid}/${entry.task}`, message: cause.message, stack: cause.stack });
      this.#restartLater(entry, `${cause.message}. ${cause.hint}`);
      return;
    }
    this.#setup.log(
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
      if (!entry.revoked && !this.#closed && this.#entries.get(entry.global) === entry) this.#startSoon(entry);
    });
  }
}
