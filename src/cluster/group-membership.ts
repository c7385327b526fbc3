import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@platformatic/kafka';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { hasKafkaError, kafkaErrorIds } from '../connectors/kafka/kafka-error-ids.ts';
import { heartbeatV4, joinGroupV9, leaveGroupV5, syncGroupV5 } from '../connectors/kafka/kafka-protocol.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { findGroupCoordinator } from './find-group-coordinator.ts';
import {
  decodeAssignment,
  decodeMemberMetadata,
  encodeAssignment,
  encodeMemberMetadata,
  MEMBER_PROTOCOL,
  MEMBER_PROTOCOL_TYPE,
  MEMBER_PROTOCOL_VERSION,
  type MemberAssignment,
} from './member-protocol.ts';
import { assignTasks } from './task-assignor.ts';

/** What a member answers by joining again (a rebalance, or it is out of the group): the first at once, repeated ones after a back-off. */
const REJOIN_ERRORS = ['REBALANCE_IN_PROGRESS', 'UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION'];
/** What no retry mends: the membership ends (the others go on). */
const FATAL = new Set<string>(['CLUSTER_INSTANCE_ID_IN_USE', 'CLUSTER_TASK_COUNT_MISMATCH', 'CLUSTER_PROTOCOL_MISMATCH']);

export interface GroupMembershipOptions {
  /** The consumer group: one per job (`weir run --cluster <id>`). */
  groupId: string;
  /** The job's task count, fixed for its life. */
  taskCount: number;
  /** Each task's name (`<stage uid>/<task>`), by number: in the member's metadata, for `weir cluster status`. */
  taskNames?: readonly string[] | undefined;
  /** Static membership (group.instance.id): a member restarted under it within the session timeout gets its tasks back without a rebalance. */
  instanceId?: string | undefined;
  /** A member silent for this long is out of the group (its tasks go to the others). The broker bounds it (group.min/max.session.timeout.ms). */
  sessionTimeoutMs: number;
  /** How long the group waits for its members to rejoin a rebalance. */
  rebalanceTimeoutMs: number;
  /** Default: a sixth of the session timeout. */
  heartbeatIntervalMs?: number;
  /**
   * The member's tasks changed: `revoked` are no longer its own (stop them; another member may
   * have them already, fenced from this one by its producer epoch), `assigned` are new to it.
   * Awaited before the member heartbeats again.
   */
  onChange(change: { assigned: number[]; revoked: number[]; tasks: number[]; generation: number; owners: Record<string, number[]> }): void | Promise<void>;
  log?: (line: string) => void;
}

/**
 * One member of a cluster-mode job in Kafka's classic group protocol, with a client-side assignor
 * (as Kafka Streams): FindCoordinator, JoinGroup (this member's metadata: the task count and what
 * it owns), the leader's sticky assignment of the tasks (task-assignor.ts) in SyncGroup, then
 * heartbeats. Membership, failure detection and assignment are the broker's group coordinator's:
 * no process of Weir's coordinates anything.
 *
 * It changes this member's tasks only when it knows: after a SyncGroup, it revokes what it no
 * longer has and assigns what it newly has. A member that learns it is out of the group (its
 * heartbeat answered UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION: it was paused or cut off past the
 * session timeout) or that cannot reach the coordinator for a whole session timeout revokes all
 * its tasks at once, before it rejoins: by then the others may run them. The overlap this leaves
 * (an old owner not yet told while the new one starts) is what producer-epoch fencing closes.
 */
export class GroupMembership {
  readonly #connections: ClusterConnections;
  readonly #options: GroupMembershipOptions;
  readonly #log: (line: string) => void;
  #memberId = '';
  #generation = -1;
  #unbrokenSince: number | undefined;
  /** In the group: its latest SyncGroup holds, and nothing since said it is out. */
  #inGroup = false;
  #tasks: number[] = [];
  /** Who owned what after the last assignment this member received (the next assignment starts from it). */
  #owners: Record<string, number[]> = {};
  #coordinator: Connection | undefined;
  #closed = false;
  #wake: (() => void) | undefined;
  #lastContact = Date.now();
  /** Heartbeating (not joining): a whole session timeout without an answer then means the coordinator has dropped this member. */
  #heartbeating = false;
  /** A heartbeat is sent and not answered yet. */
  #heartbeatInFlight = false;
  /** The watchdog's period, its last tick, and its ticks in a row that found the session expired with a heartbeat unanswered. */
  #watchdogMs = 0;
  #lastTick = 0;
  #expiredTicks = 0;
  /** The session watchdog gave the tasks up: the member joins again once it can reach the coordinator. */
  #rejoin = false;
  #watchdog: NodeJS.Timeout | undefined;
  /** The task changes, one after the other (the watchdog's and the loop's). */
  #changing: Promise<void> = Promise.resolve();
  #loop: Promise<void> | undefined;
  #fatal: ((error: Error) => void) | undefined;
  /** Rejects when the membership cannot go on (another process under this instance id, a member of another protocol). */
  readonly failed: Promise<never>;

  constructor(connections: ClusterConnections, options: GroupMembershipOptions) {
    this.#connections = connections;
    this.#options = options;
    this.#log = options.log ?? (() => {});
    this.failed = new Promise<never>((_resolve, reject) => {
      this.#fatal = reject;
    });
    this.failed.catch(() => {});
  }

  get tasks(): readonly number[] {
    return this.#tasks;
  }

  get generation(): number {
    return this.#generation;
  }

  /** The first of the generations this member applied one after the other by SyncGroup up to its current one, never out of the group meanwhile (restart-checkpoint.ts). */
  get unbrokenSince(): number | undefined {
    return this.#unbrokenSince;
  }

  get memberId(): string {
    return this.#memberId;
  }

  /**
   * Whether this member is in the group now: false before its first assignment, and from the
   * moment it learns it is out (its session expired: paused or cut off) or gives its tasks up (no
   * coordinator for a whole session timeout) until it has joined again. What readiness reports.
   */
  get inGroup(): boolean {
    return this.#inGroup && !this.#closed;
  }

  start(): void {
    this.#loop ??= this.#run();
    this.#watchdogMs = Math.max(50, Math.floor(this.#options.sessionTimeoutMs / 6));
    this.#watchdog ??= setInterval(() => this.#checkSession(), this.#watchdogMs);
    this.#watchdog.unref();
  }

  /**
   * The session watchdog (the Java consumer's heartbeat thread finding its session expired): a
   * member whose heartbeats go unanswered for a whole session timeout (cut off from the
   * coordinator: a request that hangs never fails in time) has been dropped by the coordinator,
   * which gives its tasks to the others. It gives them up at once, itself, and joins again once the
   * coordinator answers. Two ticks in a row on time must find it so: a process that was paused
   * (SIGSTOP, a long GC) wakes with every clock past the session, and hears why from the
   * coordinator's answer instead (this member is out of the group).
   */
  #checkSession(): void {
    const now = Date.now();
    const late = this.#lastTick !== 0 && now - this.#lastTick > 2 * this.#watchdogMs;
    this.#lastTick = now;
    const expired = this.#heartbeating && this.#heartbeatInFlight && now - this.#lastContact > this.#options.sessionTimeoutMs;
    if (late || !expired || this.#closed || this.#rejoin || (this.#tasks.length === 0 && !this.#inGroup)) {
      this.#expiredTicks = 0;
      return;
    }
    if (++this.#expiredTicks < 2) return;
    this.#rejoin = true;
    this.#inGroup = false;
    this.#coordinator = undefined;
    this.#log(
      `cluster ${this.#options.groupId}: no answer from the group coordinator for a whole session timeout; giving up tasks ${this.#tasks.join(', ') || '(none)'}`,
    );
    void this.#change([], this.#generation, {}).catch(() => {});
  }

  /** Revokes every task and leaves the group (a static member stays in it: its tasks wait for it until the session timeout). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watchdog);
    this.#wake?.();
    await this.#loop;
    await this.#change([], this.#generation, {});
    if (this.#memberId !== '' && this.#options.instanceId === undefined) {
      const coordinator = this.#coordinator;
      if (coordinator !== undefined) {
        await leaveGroupV5.api.async(coordinator, this.#options.groupId, [{ memberId: this.#memberId, reason: 'the member closed' }]).catch(() => {});
      }
    }
  }

  /**
   * Joins, heartbeats, and joins again, until closed. A rebalance or the news that this member is
   * out of the group is answered by joining again at once; an error that repeats before a join
   * succeeds (or any other error) waits first, 100 ms doubling to 5 s, and says so, as Kafka's
   * consumer backs off (retry.backoff.ms up to retry.backoff.max.ms).
   */
  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#closed) {
      try {
        await this.#joinAndSync();
        failures = 0;
        await this.#heartbeatUntilRebalance();
      } catch (error) {
        if (error instanceof WeirError && FATAL.has(error.code)) {
          this.#closed = true;
          this.#inGroup = false;
          await this.#change([], this.#generation, {});
          this.#fatal?.(error);
          return;
        }
        const rejoin = hasKafkaError(error, ...REJOIN_ERRORS);
        // Only a coordinator that moved, is not there or cannot be reached is looked up again.
        if (!rejoin) this.#coordinator = undefined;
        if (hasKafkaError(error, 'UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION')) await this.#outOfGroup(error);
        else if (Date.now() - this.#lastContact > this.#options.sessionTimeoutMs && (this.#tasks.length > 0 || this.#inGroup)) {
          this.#log(
            `cluster ${this.#options.groupId}: no answer from the group coordinator for a whole session timeout; giving up tasks ${this.#tasks.join(', ') || '(none)'}`,
          );
          this.#inGroup = false;
          await this.#change([], this.#generation, {});
        }
        failures++;
        if (this.#closed || (rejoin && failures === 1)) continue;
        const delay = Math.min(5_000, 100 * 2 ** Math.min(failures - 1, 6));
        const what = rejoin ? `cannot join again (${kafkaErrorIds(error).find((id) => REJOIN_ERRORS.includes(id))})` : describe(error);
        this.#log(`cluster ${this.#options.groupId}: ${what}; retrying in ${delay} ms`);
        await this.#pause(delay);
      }
    }
  }

  async #joinAndSync(): Promise<void> {
    const { groupId, sessionTimeoutMs, rebalanceTimeoutMs, instanceId, taskCount, taskNames } = this.#options;
    const metadata = encodeMemberMetadata({ version: MEMBER_PROTOCOL_VERSION, taskCount, ...(taskNames === undefined ? {} : { taskNames: [...taskNames] }) });
    this.#rejoin = false;
    const coordinator = await this.#coordinatorConnection();
    let join: Awaited<ReturnType<typeof joinGroupV9.api.async>>;
    for (;;) {
      try {
        join = await joinGroupV9.api.async(
          coordinator,
          groupId,
          sessionTimeoutMs,
          rebalanceTimeoutMs,
          this.#memberId,
          instanceId ?? null,
          MEMBER_PROTOCOL_TYPE,
          [{ name: MEMBER_PROTOCOL, metadata }],
        );
        break;
      } catch (error) {
        const given = (error as { response?: { memberId?: string } }).response?.memberId;
        if (hasKafkaError(error, 'MEMBER_ID_REQUIRED') && given) {
          this.#memberId = given; // KIP-394: join again with the id the coordinator gave
          continue;
        }
        if (hasKafkaError(error, 'FENCED_INSTANCE_ID')) throw this.#instanceIdInUse(error);
        if (hasKafkaError(error, 'INCONSISTENT_GROUP_PROTOCOL')) {
          throw new WeirError(
            'CLUSTER_PROTOCOL_MISMATCH',
            `the group "${groupId}" is used by clients that are not Weir members of this protocol (${MEMBER_PROTOCOL})`,
            {
              hint: 'give the cluster an id no consumer group of other clients uses (--cluster <id>)',
              fault: 'user',
              cause: error,
            },
          );
        }
        throw error;
      }
    }
    this.#memberId = join.memberId;
    this.#lastContact = Date.now();
    const assignments =
      join.leader === join.memberId && !join.skipAssignment
        ? this.#assign(join.members, join.generationId).map(([memberId, assignment]) => ({ memberId, assignment: encodeAssignment(assignment) }))
        : [];
    const sync = await syncGroupV5.api
      .async(coordinator, groupId, join.generationId, join.memberId, instanceId ?? null, MEMBER_PROTOCOL_TYPE, MEMBER_PROTOCOL, assignments)
      .catch((error: unknown) => {
        if (hasKafkaError(error, 'FENCED_INSTANCE_ID')) throw this.#instanceIdInUse(error);
        throw error;
      });
    this.#lastContact = Date.now();
    const assignment = decodeAssignment(sync.assignment, join.memberId);
    this.#owners = assignment.owners;
    this.#inGroup = true;
    await this.#change(assignment.tasks, join.generationId, assignment.owners);
  }

  /** The leader's assignment: every member's share, sticky, and each member told every owner. */
  #assign(members: { memberId: string; groupInstanceId?: string | null; metadata: Buffer }[], generation: number): [string, MemberAssignment][] {
    const decoded = members.map((member) => ({ ...member, info: decodeMemberMetadata(member.metadata, member.groupInstanceId ?? member.memberId) }));
    const names = this.#options.taskNames?.join('\n');
    const other = decoded.find(
      (member) =>
        member.info.taskCount !== this.#options.taskCount ||
        (names !== undefined && member.info.taskNames !== undefined && member.info.taskNames.join('\n') !== names),
    );
    if (other !== undefined) {
      throw new WeirError(
        'CLUSTER_TASK_COUNT_MISMATCH',
        `cluster ${this.#options.groupId}: member ${other.groupInstanceId ?? other.memberId} runs the job with ${other.info.taskCount} tasks${other.info.taskCount === this.#options.taskCount ? ' of other stages' : ''}, this one (${hostname()}, process ${process.pid}) with ${this.#options.taskCount}`,
        {
          hint: 'every member must run the same job (same graph, maxParallelism and cluster.keyedTasks); stop the member that runs another version',
          fault: 'user',
        },
      );
    }
    const tasks = assignTasks(
      this.#options.taskCount,
      decoded.map((member) => ({
        memberId: member.memberId,
        instanceId: member.groupInstanceId ?? undefined,
        owned: this.#owners[member.groupInstanceId ?? member.memberId] ?? [],
      })),
    );
    const owners: Record<string, number[]> = {};
    for (const member of decoded) owners[member.groupInstanceId ?? member.memberId] = tasks.get(member.memberId) ?? [];
    return decoded.map((member) => [member.memberId, { version: MEMBER_PROTOCOL_VERSION, generation, tasks: tasks.get(member.memberId) ?? [], owners }]);
  }

  async #heartbeatUntilRebalance(): Promise<void> {
    const { groupId, instanceId, sessionTimeoutMs } = this.#options;
    // A sixth of the session timeout (Kafka's consumer: 3 s of 45 s): the survivors of a member's
    // death hear of the rebalance within a sixth of it, not a third, after its session expired.
    const interval = this.#options.heartbeatIntervalMs ?? Math.max(100, Math.floor(sessionTimeoutMs / 6));
    this.#heartbeating = true;
    try {
      while (!this.#closed && !this.#rejoin) {
        await this.#pause(interval);
        if (this.#closed || this.#rejoin) break;
        const coordinator = await this.#coordinatorConnection();
        this.#heartbeatInFlight = true;
        await heartbeatV4.api.async(coordinator, groupId, this.#generation, this.#memberId, instanceId ?? null).catch((error: unknown) => {
          if (hasKafkaError(error, 'FENCED_INSTANCE_ID')) throw this.#instanceIdInUse(error);
          throw error;
        });
        this.#heartbeatInFlight = false;
        this.#lastContact = Date.now();
      }
    } finally {
      this.#heartbeating = false;
      this.#heartbeatInFlight = false;
    }
  }

  /**
   * The coordinator says this member is no longer in the group: every task is gone already. As
   * Kafka's consumer does, UNKNOWN_MEMBER_ID forgets the member id, so the member joins again as a
   * new one: a static member under the same instance id (the coordinator dropped both when its
   * session expired, and would answer its old member id UNKNOWN_MEMBER_ID for ever);
   * ILLEGAL_GENERATION keeps it (the member is known, its generation is not).
   */
  async #outOfGroup(error: unknown): Promise<void> {
    const unknown = hasKafkaError(error, 'UNKNOWN_MEMBER_ID');
    if (this.#tasks.length > 0 || this.#inGroup) {
      this.#log(
        `cluster ${this.#options.groupId}: this member is out of the group (${unknown ? 'UNKNOWN_MEMBER_ID' : 'ILLEGAL_GENERATION'}: paused or cut off past the session timeout, or a rebalance went on without it); giving up tasks ${this.#tasks.join(', ') || '(none)'} and joining again${this.#options.instanceId === undefined ? '' : ` under instance id "${this.#options.instanceId}"`}`,
      );
    }
    this.#inGroup = false;
    await this.#change([], this.#generation, {});
    if (unknown) this.#memberId = '';
  }

  #change(tasks: number[], generation: number, owners: Record<string, number[]>): Promise<void> {
    const change = this.#changing.then(() => this.#applyChange(tasks, generation, owners));
    this.#changing = change.catch(() => {});
    return change;
  }

  async #applyChange(tasks: number[], generation: number, owners: Record<string, number[]>): Promise<void> {
    const before = new Set(this.#tasks);
    const after = new Set(tasks);
    const revoked = this.#tasks.filter((task) => !after.has(task));
    const assigned = tasks.filter((task) => !before.has(task));
    this.#tasks = [...tasks];
    const changedGeneration = generation !== this.#generation;
    if (changedGeneration) this.#unbrokenSince = generation === this.#generation + 1 && this.#unbrokenSince !== undefined ? this.#unbrokenSince : generation;
    else if (tasks.length === 0) this.#unbrokenSince = undefined; // every task given up (out of the group, closing): what follows starts a new run
    this.#generation = generation;
    if (revoked.length === 0 && assigned.length === 0 && !changedGeneration) return;
    await this.#options.onChange({ assigned, revoked, tasks: [...tasks], generation, owners });
  }

  /** The group's coordinator: one still loading is waited for up to a session timeout, then the error says so (and the member retries). */
  async #coordinatorConnection(): Promise<Connection> {
    this.#coordinator ??= await findGroupCoordinator(this.#connections, this.#options.groupId, {
      waitMs: this.#options.sessionTimeoutMs,
      log: (line) => this.#log(`cluster ${this.#options.groupId}: ${line}`),
    });
    return this.#coordinator;
  }

  async #pause(ms: number): Promise<void> {
    const controller = new AbortController();
    this.#wake = () => controller.abort();
    await sleep(ms, undefined, { signal: controller.signal }).catch(() => {});
    this.#wake = undefined;
  }

  #instanceIdInUse(cause: unknown): WeirError {
    return new WeirError(
      'CLUSTER_INSTANCE_ID_IN_USE',
      `cluster ${this.#options.groupId}: another member runs under the instance id "${this.#options.instanceId}" (FENCED_INSTANCE_ID)`,
      { hint: 'give every member its own instance id (a StatefulSet pod name, or the host name)', fault: 'user', cause },
    );
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const ids = kafkaErrorIds(error);
  return ids.length > 0 && !ids.some((id) => error.message.includes(id)) ? `${error.message} (${[...new Set(ids)].join(', ')})` : error.message;
}
