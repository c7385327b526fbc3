import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@platformatic/kafka';
import type { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../connectors/kafka/kafka-connection-options.ts';
import { hasKafkaError, kafkaErrorIds } from '../connectors/kafka/kafka-error-ids.ts';
import { findCoordinatorV6 } from '../connectors/kafka/kafka-protocol.ts';
import { WeirError } from '../core/errors/weir-error.ts';

const GROUP_KEY_TYPE = 0;
/** What a broker answers while its group coordinator is not there yet: a fresh broker creates and loads __consumer_offsets first. */
const NOT_YET = ['COORDINATOR_LOAD_IN_PROGRESS', 'COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR'];
const NOT_YET_CODES: Record<number, string> = { 14: 'COORDINATOR_LOAD_IN_PROGRESS', 15: 'COORDINATOR_NOT_AVAILABLE', 16: 'NOT_COORDINATOR' };
/** How long `weir doctor`, `weir cluster status` and a member's start wait for a coordinator that is loading. */
export const COORDINATOR_WAIT_MS = 30_000;

export interface FindGroupCoordinatorOptions {
  /** How long a coordinator that is still loading (or not there yet) is waited for; default {@link COORDINATOR_WAIT_MS}. */
  waitMs?: number;
  /** Told once the wait starts (what it waits for), so a slow start is not silent. */
  log?: (line: string) => void;
}

/**
 * A connection to the broker that coordinates this consumer group (FindCoordinator). A broker that
 * just started answers COORDINATOR_NOT_AVAILABLE while it creates __consumer_offsets, then
 * COORDINATOR_LOAD_IN_PROGRESS while it loads the group's partition: both are retried with a
 * back-off (100 ms doubling to 2 s) for up to `waitMs`, then end in one clear error naming the
 * brokers, the last answer and what to check (CLUSTER_MEMBERSHIP_FAILED). Other errors (an
 * unreachable broker, authentication) are the connection's own, thrown as they are.
 */
export function findGroupCoordinator(connections: ClusterConnections, groupId: string, options: FindGroupCoordinatorOptions = {}): Promise<Connection> {
  return withGroupCoordinator(connections, groupId, async (connection) => connection, options);
}

/**
 * `request` sent to the group's coordinator, found as {@link findGroupCoordinator} finds it; a
 * request answered "not ready" (the group's partition still loading, or the coordinator moved) is
 * sent again, to the coordinator found again, within the same bound.
 */
export async function withGroupCoordinator<T>(
  connections: ClusterConnections,
  groupId: string,
  request: (coordinator: Connection) => Promise<T>,
  options: FindGroupCoordinatorOptions = {},
): Promise<T> {
  const waitMs = options.waitMs ?? COORDINATOR_WAIT_MS;
  const deadline = Date.now() + waitMs;
  let lastAnswer = '';
  for (let attempt = 0; ; attempt++) {
    const asked = await connections.any();
    let broker = asked.host === undefined ? formatBootstrap(connections.bootstrap) : `${asked.host}:${asked.port}`;
    try {
      const found = (await findCoordinatorV6.api.async(asked, GROUP_KEY_TYPE, [groupId])).coordinators[0];
      const code = found?.errorCode ?? -1;
      if (found !== undefined && code === 0) {
        broker = `${found.host}:${found.port} (node ${found.nodeId})`;
        return await request(await connections.node(found.nodeId));
      }
      if (NOT_YET_CODES[code] === undefined) {
        throw new WeirError('CLUSTER_MEMBERSHIP_FAILED', `broker ${broker} answered FindCoordinator for group "${groupId}" with error ${code}`, {
          hint: "check the broker's log for that error",
          fault: 'external',
        });
      }
      lastAnswer = `${NOT_YET_CODES[code]} from broker ${broker}`;
    } catch (error) {
      if (!hasKafkaError(error, ...NOT_YET)) throw error;
      lastAnswer = `${kafkaErrorIds(error).find((id) => NOT_YET.includes(id))} from broker ${broker}`;
    }
    if (attempt === 0) options.log?.(`the group coordinator for "${groupId}" is not ready (${lastAnswer}); waiting up to ${Math.round(waitMs / 1000)} s`);
    const left = deadline - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(left, 2000, 100 * 2 ** attempt));
  }
  throw new WeirError(
    'CLUSTER_MEMBERSHIP_FAILED',
    `the brokers at ${formatBootstrap(connections.bootstrap)} have no group coordinator for "${groupId}" after ${Math.round(waitMs / 1000)} s (last: ${lastAnswer})`,
    {
      hint: "a broker that has just started creates and loads its __consumer_offsets topic first: try again in a few seconds; if it lasts, check the broker's log for __consumer_offsets, and that offsets.topic.replication.factor is at most the number of live brokers",
      fault: 'external',
      retriable: true,
    },
  );
}
