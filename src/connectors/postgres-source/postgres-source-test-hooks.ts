/**
 * Test hooks of the PostgreSQL source, off unless their variable is set (as WEIR_FAULT and
 * WEIR_TEST_POSTGRES_DELAY are for the rest):
 *
 * - `WEIR_TEST_POSTGRES_SOURCE_FAULT=before-ack:<checkpoint id>` SIGKILLs the process when the
 *   source is told that checkpoint (or a later one) completed, before it confirms the checkpoint's
 *   LSN to the server: the crash between "checkpoint complete" and the acknowledgement.
 * - `WEIR_TEST_POSTGRES_SOURCE_DELAY=snapshot-fetch:<ms>` holds the snapshot `ms` after each FETCH,
 *   so a test can kill the job in the middle of its snapshot.
 * - `WEIR_TEST_POSTGRES_SOURCE_ACK=at-emission` confirms each LSN to the server as soon as its
 *   change is emitted instead of when a checkpoint holding it completes: the bug the exactly-once
 *   test must catch (a restore then starts after changes no checkpoint holds: they are lost).
 */
import { writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const fault = /^before-ack:(\d+)$/.exec(process.env.WEIR_TEST_POSTGRES_SOURCE_FAULT ?? '');

/** Kills the process before the acknowledgement of checkpoint `checkpointId`, when the variable asks for it. */
export function faultBeforeAck(checkpointId: number, lsn: string): void {
  if (fault === null || checkpointId < Number(fault[1])) return;
  // Written at once (a worker thread's process.stderr is flushed by the main thread, too late for a SIGKILL).
  writeSync(2, `weir: WEIR_TEST_POSTGRES_SOURCE_FAULT: killing the process after checkpoint ${checkpointId} completed, before LSN ${lsn} is confirmed\n`);
  process.kill(process.pid, 'SIGKILL');
}

/** The bug mode: acknowledge at emission. */
export const ackAtEmission = process.env.WEIR_TEST_POSTGRES_SOURCE_ACK === 'at-emission';

const fetchDelay = /^snapshot-fetch:(\d+)$/.exec(process.env.WEIR_TEST_POSTGRES_SOURCE_DELAY ?? '');

/** Holds the snapshot after a FETCH, when the variable asks for it. */
export async function snapshotFetchDelay(): Promise<void> {
  if (fetchDelay !== null) await sleep(Number(fetchDelay[1]));
}
