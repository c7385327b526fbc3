import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../connectors/kafka/kafka-connection-options.ts';
import { describeGroupsV5 } from '../connectors/kafka/kafka-protocol.ts';
import { LATEST_OFFSET, listOffsets } from '../connectors/kafka/partition-fetcher.ts';
import { readTopic } from '../connectors/kafka/topic-reader.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { withGroupCoordinator } from './find-group-coordinator.ts';
import { decodeAssignment, decodeMemberMetadata, MEMBER_PROTOCOL_TYPE } from './member-protocol.ts';
import { clusterTopicName } from './stage-plan.ts';
import { latestTaskCheckpoints, type TaskCheckpoint } from './task-checkpoint.ts';

export interface ClusterTaskStatus {
  /** `<stage uid>/<task>`. */
  name: string;
  /** Its owner's instance id, else member id; undefined: no member owns it now. */
  owner: string | undefined;
  checkpointId: number | undefined;
  completedAt: number | undefined;
  watermark: number | null | undefined;
  /** Records between its latest checkpoint's offsets and its input's end (read_committed); undefined before its first checkpoint. */
  lag: number | undefined;
}

export interface ClusterStatus {
  cluster: string;
  /** The group's state (Stable, PreparingRebalance, CompletingRebalance, Empty, Dead). */
  state: string;
  /** The generation of the assignment the members hold (DescribeGroups does not tell it: the leader writes it into every assignment); undefined without one. */
  generation: number | undefined;
  members: { id: string; memberId: string; clientHost: string; tasks: string[] }[];
  tasks: ClusterTaskStatus[];
  checkpointTopic: string;
}

/**
 * A cluster's state as Kafka holds it, so it can be read from any machine: the members and what
 * each owns (the group, DescribeGroups: each member's metadata names the job's tasks, the leader's
 * assignment says whose they are), each task's latest checkpoint (the compacted checkpoint topic,
 * read_committed) and its lag (its checkpointed offsets against its input's last stable offsets).
 */
export async function readClusterStatus(connections: ClusterConnections, bootstrap: readonly BrokerAddress[], cluster: string): Promise<ClusterStatus> {
  const group = (await withGroupCoordinator(connections, cluster, (coordinator) => describeGroupsV5.api.async(coordinator, [cluster], false))).groups[0];
  if (group === undefined || group.errorCode !== 0) {
    throw new WeirError('CLUSTER_MEMBERSHIP_FAILED', `cannot describe the group of cluster "${cluster}" (error ${group?.errorCode})`, { fault: 'external' });
  }
  // A group with no member now has no protocol type: the checkpoint topic still tells each task's last checkpoint.
  if (group.protocolType !== '' && group.protocolType !== MEMBER_PROTOCOL_TYPE) {
    throw new WeirError('CLUSTER_PROTOCOL_MISMATCH', `the group "${cluster}" is not a Weir cluster (its protocol type is "${group.protocolType}")`, {
      hint: 'give the id a weir run --cluster was started with',
    });
  }
  let names: string[] = [];
  let generation: number | undefined;
  const owners = new Map<number, string>();
  const members = group.members.map((member) => {
    const id = member.groupInstanceId ?? member.memberId;
    const metadata = member.memberMetadata.length > 0 ? decodeMemberMetadata(member.memberMetadata, id) : undefined;
    if (metadata?.taskNames !== undefined && metadata.taskNames.length > names.length) names = metadata.taskNames;
    const assignment = member.memberAssignment.length > 0 ? decodeAssignment(member.memberAssignment, id) : undefined;
    // The leader writes the generation into each assignment (a leader of Weir before that wrote -1: unknown).
    if (assignment !== undefined && assignment.generation >= 0) generation = Math.max(generation ?? 0, assignment.generation);
    for (const task of assignment?.tasks ?? []) owners.set(task, id);
    return { id, memberId: member.memberId, clientHost: member.clientHost, tasks: assignment?.tasks ?? [] };
  });
  const checkpointTopic = clusterTopicName(cluster, 'checkpoints');
  const checkpoints = await readTopic({ bootstrap, topic: checkpointTopic, timeoutMs: 30_000 })
    .then((records) => latestTaskCheckpoints(records, checkpointTopic))
    .catch((error: unknown) => {
      if (error instanceof WeirError && error.code === 'UNKNOWN_TOPIC') return new Map<string, TaskCheckpoint>();
      throw error;
    });
  const lags = await lagOf(connections, [...checkpoints.values()]);
  const nameOf = (task: number) => names[task] ?? `task ${task}`;
  const taskNames = names.length > 0 ? names : [...checkpoints.keys()].sort();
  const tasks = taskNames.map((name, index): ClusterTaskStatus => {
    const checkpoint = checkpoints.get(name);
    return {
      name,
      owner: names.length > 0 ? owners.get(index) : undefined,
      checkpointId: checkpoint?.checkpointId,
      completedAt: checkpoint?.completedAt,
      watermark: checkpoint?.watermark,
      lag: lags.get(name),
    };
  });
  return {
    cluster,
    state: group.groupState,
    generation,
    members: members.map((member) => ({ ...member, tasks: member.tasks.map(nameOf) })),
    tasks,
    checkpointTopic,
  };
}

/** Per task: the records between its checkpoint's offsets and the last stable offsets of those partitions. */
async function lagOf(connections: ClusterConnections, checkpoints: readonly TaskCheckpoint[]): Promise<Map<string, number>> {
  const topics = new Set(checkpoints.flatMap((checkpoint) => checkpoint.offsets.map((entry) => entry.topic)));
  const ends = new Map<string, Map<number, bigint>>();
  for (const name of topics) {
    const info = await connections.topic(name).catch(() => undefined);
    if (info !== undefined) ends.set(name, await listOffsets(connections, info, info.partitions, 'read_committed', LATEST_OFFSET));
  }
  const lags = new Map<string, number>();
  for (const checkpoint of checkpoints) {
    let lag = 0;
    for (const { topic, partition, offset } of checkpoint.offsets) {
      const end = ends.get(topic)?.get(partition);
      if (end !== undefined && end > BigInt(offset)) lag += Number(end - BigInt(offset));
    }
    lags.set(`${checkpoint.stage}/${checkpoint.task}`, lag);
  }
  return lags;
}
