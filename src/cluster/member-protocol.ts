import { z } from 'zod';
import { WeirError } from '../core/errors/weir-error.ts';
import { decodeVersionedJson } from './versioned-json.ts';

/**
 * What the members of a cluster-mode job tell each other through Kafka's group protocol (the
 * classic protocol's opaque bytes, as Kafka Streams' SubscriptionInfo and AssignmentInfo): each
 * member's metadata in JoinGroup, and the leader's assignment to each in SyncGroup. Both are
 * versioned JSON, so a member of a newer Weir is refused by name instead of misread.
 */

/** JoinGroup's protocol type for every Weir cluster group; other clients cannot join by mistake. */
export const MEMBER_PROTOCOL_TYPE = 'weir';
/** The one assignment protocol (the name carries its version). */
export const MEMBER_PROTOCOL = 'weir-tasks-v1';
export const MEMBER_PROTOCOL_VERSION = 1;

const memberMetadataSchema = z.object({
  version: z.literal(MEMBER_PROTOCOL_VERSION),
  /** The job's task count (fixed for its life): members that disagree run different jobs. */
  taskCount: z.number().int().positive(),
  /** Every task's name (`<stage uid>/<task>`), by task number: what `weir cluster status` shows, and a stricter check that members run one job. */
  taskNames: z.array(z.string()).optional(),
});

const assignmentSchema = z.object({
  version: z.literal(MEMBER_PROTOCOL_VERSION),
  generation: z.number().int(),
  /** The tasks of the member it is sent to. */
  tasks: z.array(z.number().int().nonnegative()),
  /**
   * Every member's tasks (by instance id, else member id), so any member can say who owns what,
   * and the next leader, whoever it is, keeps the assignment sticky. (Members do not send what
   * they own in JoinGroup: their metadata stays the same, so a static member that restarts gets
   * its tasks back without a rebalance.)
   */
  owners: z.record(z.string(), z.array(z.number().int().nonnegative())),
});

export type MemberMetadata = z.infer<typeof memberMetadataSchema>;
export type MemberAssignment = z.infer<typeof assignmentSchema>;

export function encodeMemberMetadata(metadata: MemberMetadata): Buffer {
  return Buffer.from(JSON.stringify(metadata));
}

export function decodeMemberMetadata(bytes: Buffer, member: string): MemberMetadata {
  return decode(memberMetadataSchema, bytes, `the metadata of member ${member}`);
}

export function encodeAssignment(assignment: MemberAssignment): Buffer {
  return Buffer.from(JSON.stringify(assignment));
}

export function decodeAssignment(bytes: Buffer, member: string): MemberAssignment {
  return decode(assignmentSchema, bytes, `the assignment for member ${member}`);
}

function decode<S extends z.ZodType>(schema: S, bytes: Buffer, what: string): z.infer<S> {
  return decodeVersionedJson(
    schema,
    bytes,
    MEMBER_PROTOCOL_VERSION,
    (problem) =>
      new WeirError(
        'CLUSTER_PROTOCOL_MISMATCH',
        problem.kind === 'too-new'
          ? `${what} is of protocol version ${problem.version}; this Weir speaks version ${MEMBER_PROTOCOL_VERSION}`
          : `${what} is not Weir's cluster protocol (${problem.issue})`,
        { hint: 'run every member of a cluster with the same Weir version (upgrade them one at a time, newest last)', fault: 'user' },
      ),
  );
}
