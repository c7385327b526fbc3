import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionOptions } from '@platformatic/kafka';
import type { PreflightFinding } from '../../core/connector/preflight.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import { formatDuration } from '../../core/time/duration.ts';
import { ClusterConnections } from './cluster-connections.ts';
import type { BrokerAddress } from './kafka-connection-options.ts';
import { type TransactionDescription, TransactionDriver } from './transaction-driver.ts';

/** How long the start watches the open transactions of a prefix for a live producer: twice the checkpoint interval, within these bounds. */
export const PREFIX_PROBE_MIN_MS = 2_000;
export const PREFIX_PROBE_MAX_MS = 10_000;

export function prefixProbeWindow(checkpointIntervalMs: number | undefined): number {
  return Math.min(PREFIX_PROBE_MAX_MS, Math.max(PREFIX_PROBE_MIN_MS, 2 * (checkpointIntervalMs ?? 0)));
}

/**
 * Whether another live job writes under this transactional id prefix (then starting would fence its
 * transactions: it would fail with DATA_LOSS, or fence ours). The open transactions of the prefix
 * are not enough to tell: a crash of this very job leaves its own open too, and those the start
 * must abort or commit. So the open transactions are watched for `windowMs`: a dead run's
 * transactions stand still until the broker's timeout aborts them; a live job's change (it adds
 * partitions, commits, begins the next transaction under another id, re-initializes an id).
 * Anything that moves in the window, other than an abort by the transaction timeout, means a live
 * producer. With no open transaction of the prefix nothing is watched (no delay), nor when the job's
 * previous run is known to be gone (`predecessorGone`: this run took its checkpoint storage's lock
 * over from it): its open transactions are what the start ends, and a restart after a crash does
 * not wait the window.
 */
export async function prefixInUseFinding(
  where: string,
  prefix: string,
  bootstrap: readonly BrokerAddress[],
  connection: ConnectionOptions | undefined,
  windowMs: number,
  predecessorGone?: string,
): Promise<PreflightFinding | undefined> {
  const connections = new ClusterConnections(bootstrap, { clientId: 'weir-preflight', ...connection });
  try {
    const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
    const open = await driver.listOpenTransactions(prefix);
    if (open.length === 0) return undefined;
    if (predecessorGone !== undefined) {
      processLog().info(
        `${where}: ${open.length} open transaction(s) under "${prefix}", left by the job's previous run (${predecessorGone}): ended by this start, not watched`,
      );
      return undefined;
    }
    const before = await driver.describeTransactions(open);
    await sleep(windowMs);
    const reopened = await driver.listOpenTransactions(prefix);
    const after = await driver.describeTransactions([...new Set([...open, ...reopened])]);
    const moved = activity(before, after, Date.now());
    if (moved === undefined) return undefined;
    return {
      level: 'error',
      where,
      message:
        `${where}: another live producer uses the transactional id prefix "${prefix}": ${moved} within ${formatDuration(windowMs)}; ` +
        'starting would fence its transactions (that job would fail with DATA_LOSS, or fence this one)',
      hint: `give this sink (or the other job's) its own transactionalIdPrefix; if the other job is a stale copy of this one, stop it first`,
    };
  } finally {
    await connections.close().catch(() => {});
  }
}

/** What changed between two looks at a prefix's transactions, or undefined when nothing did (timeout aborts aside). */
export function activity(before: readonly TransactionDescription[], after: readonly TransactionDescription[], now: number): string | undefined {
  const earlier = new Map(before.map((description) => [description.transactionalId, description]));
  for (const current of after) {
    const old = earlier.get(current.transactionalId);
    const isOpen = current.state === 'Ongoing';
    if (old === undefined) {
      if (isOpen) return `transaction "${current.transactionalId}" began`;
      continue;
    }
    // The broker's transaction timeout aborted it (and bumped its epoch): a dead run's transaction does that.
    if (!isOpen && old.state === 'Ongoing' && now >= old.startTimeMs + old.timeoutMs) continue;
    if (old.producerId !== current.producerId || old.producerEpoch !== current.producerEpoch) {
      return `transactional id "${current.transactionalId}" was initialized again (producer ${old.producerId}/${old.producerEpoch} -> ${current.producerId}/${current.producerEpoch})`;
    }
    if (isOpen && (old.startTimeMs !== current.startTimeMs || old.partitions !== current.partitions)) {
      return `transaction "${current.transactionalId}" wrote to new partitions or began again`;
    }
    if (!isOpen && old.state === 'Ongoing') return `transaction "${current.transactionalId}" was ended by its producer (${current.state})`;
  }
  return undefined;
}
