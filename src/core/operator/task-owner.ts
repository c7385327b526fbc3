/**
 * Cluster mode's order of a task's owners. Every run of a task (a member that took it, the same
 * member starting it again) first fences the runs before it: InitProducerId on the task's
 * transactional id, which answers with a producer id and an epoch higher than any that id had. So
 * among the runs of one task, a later run's (producer id, epoch) at its start is the higher one,
 * and no two runs start with the same. A run that has not stopped yet after a later one started
 * (a zombie) can commit nothing in Kafka any more; what it leaves elsewhere (files, prepared
 * transactions of a database) its successor may clear, and it may clear only what earlier owners
 * left, never its successor's.
 */

/** The producer a task's run was fenced in with: its id and its epoch when the run began. */
export interface TaskOwner {
  readonly producerId: bigint;
  readonly epoch: number;
}

/**
 * Whether `other` is an earlier owner of the task than `mine`: the same producer id with a lower
 * epoch. An owner of another producer id is not (the broker gives a transactional id a new producer
 * id when its epochs are exhausted or it expired): its order is left unknown, so nothing of it is
 * cleared by this rule.
 */
export function isEarlierOwner(other: TaskOwner, mine: TaskOwner): boolean {
  return other.producerId === mine.producerId && other.epoch < mine.epoch;
}

/** An owner as a name's token: `<producer id>_<epoch>`, both in base 36 (at most 13 and 3 characters). */
export function ownerToken(owner: TaskOwner): string {
  return `${owner.producerId.toString(36)}_${owner.epoch.toString(36)}`;
}

/** The owner a token names (see {@link ownerToken}), or undefined when it is not one. */
export function ownerOfToken(token: string | undefined): TaskOwner | undefined {
  const match = token === undefined ? null : /^([0-9a-z]{1,13})_([0-9a-z]{1,3})$/.exec(token);
  if (match === null) return undefined;
  let producerId = 0n;
  for (const digit of match[1] as string) producerId = producerId * 36n + BigInt(Number.parseInt(digit, 36));
  return { producerId, epoch: Number.parseInt(match[2] as string, 36) };
}
