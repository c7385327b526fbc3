/** The consumer group member whose input offsets a transaction commits (KIP-447: the group's coordinator refuses a member of an older generation). */
export interface OffsetsOwner {
  groupId: string;
  generationId: number;
  memberId: string;
  groupInstanceId: string | null;
}

/** An input position: the next offset to read. */
export interface InputOffset {
  topic: string;
  partition: number;
  offset: bigint;
}
