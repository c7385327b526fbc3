/**
 * The client-side task assignor of cluster mode (Kafka Streams' StickyTaskAssignor, reduced to
 * what Weir needs): the group's leader runs it in every rebalance, over the tasks 0..taskCount-1
 * and the members that joined. The assignment is balanced (member task counts differ by at most
 * one) and sticky (a member keeps the tasks it owned, up to its share), so a rebalance moves only
 * what must move: a new member takes tasks from the busiest, a departed member's tasks spread over
 * the rest. It is deterministic: the same members and ownership give the same answer on any leader.
 */

/** A member as the assignor sees it: its id in the group, its static id (if any), and what it owns now. */
export interface AssignorMember {
  memberId: string;
  /** Static membership's group.instance.id: a member that comes back under it is the same member. */
  instanceId?: string | undefined;
  owned: readonly number[];
}

/** Tasks per member id, each list ascending. */
export function assignTasks(taskCount: number, members: readonly AssignorMember[]): Map<string, number[]> {
  if (!Number.isSafeInteger(taskCount) || taskCount < 1) throw new RangeError(`taskCount must be a whole number of at least 1, not ${taskCount}`);
  const order = [...members].sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
  const result = new Map<string, number[]>(order.map((member) => [member.memberId, []]));
  if (order.length === 0) return result;
  const base = Math.floor(taskCount / order.length);
  let extra = taskCount % order.length; // this many members get base + 1
  // Members that own more keep the larger shares, so fewer tasks move.
  const byOwned = [...order].sort((a, b) => validOwned(b, taskCount).length - validOwned(a, taskCount).length || keyOf(a).localeCompare(keyOf(b)));
  const quota = new Map<string, number>();
  for (const member of byOwned) {
    const share = base + (extra > 0 ? 1 : 0);
    if (extra > 0) extra--;
    quota.set(member.memberId, share);
  }
  const taken = new Set<number>();
  // Sticky: each member keeps what it owned, up to its quota (a task two members claim goes to the first in order).
  for (const member of order) {
    const mine = result.get(member.memberId) as number[];
    for (const task of validOwned(member, taskCount)) {
      if (mine.length >= (quota.get(member.memberId) as number)) break;
      if (taken.has(task)) continue;
      taken.add(task);
      mine.push(task);
    }
  }
  // The rest to whoever is below quota, in task order, filling the emptiest first.
  for (let task = 0; task < taskCount; task++) {
    if (taken.has(task)) continue;
    let best: AssignorMember | undefined;
    for (const member of order) {
      const mine = result.get(member.memberId) as number[];
      if (mine.length >= (quota.get(member.memberId) as number)) continue;
      if (best === undefined || mine.length < (result.get(best.memberId) as number[]).length) best = member;
    }
    (result.get((best as AssignorMember).memberId) as number[]).push(task);
    taken.add(task);
  }
  for (const tasks of result.values()) tasks.sort((a, b) => a - b);
  return result;
}

function keyOf(member: AssignorMember): string {
  return member.instanceId ?? member.memberId;
}

function validOwned(member: AssignorMember, taskCount: number): number[] {
  return [...new Set(member.owned)].filter((task) => Number.isSafeInteger(task) && task >= 0 && task < taskCount).sort((a, b) => a - b);
}
