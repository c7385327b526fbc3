import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckpointLocation } from './checkpoint-location.ts';

/**
 * Delays of storage operations for the crash tests, off unless WEIR_TEST_STORAGE_DELAY names them:
 * `WEIR_TEST_STORAGE_DELAY=<operation>:[>=]<checkpoint id>:<ms>[,...]` holds that operation on
 * that checkpoint or savepoint (or on every one from that id on, with `>=`) for `ms` before it does anything, so a test can fail a task, stop the
 * process or kill it while, say, a checkpoint's `_metadata` is being written. Operations:
 *
 * - `metadata`: {@link CheckpointStorage.commitMetadata} (before anything is written);
 * - `discard`: {@link CheckpointStorage.discard} (before anything is deleted).
 */
const delays = parse(process.env.WEIR_TEST_STORAGE_DELAY);

interface Delay {
  operation: DelayedStorageOperation;
  checkpointId: number;
  /** Also every checkpoint above `checkpointId` (`>=<id>`). */
  andAbove: boolean;
  ms: number;
}

export type DelayedStorageOperation = 'metadata' | 'discard';

/** Waits as WEIR_TEST_STORAGE_DELAY asks for this operation on this location (at once when it asks nothing). */
export async function storageTestDelay(operation: DelayedStorageOperation, location: CheckpointLocation): Promise<void> {
  const id = location.checkpointId;
  const ms = delays?.find((delay) => delay.operation === operation && (delay.andAbove ? id >= delay.checkpointId : id === delay.checkpointId))?.ms;
  if (ms === undefined) return;
  process.stderr.write(`weir: WEIR_TEST_STORAGE_DELAY: holding ${operation} of ${location.kind} ${location.checkpointId} for ${ms} ms\n`);
  await sleep(ms);
}

function parse(spec: string | undefined): Delay[] | undefined {
  if (spec === undefined || spec === '') return undefined;
  return spec.split(',').map((part) => {
    const match = /^(metadata|discard):(>=)?(\d+):(\d+)$/.exec(part.trim());
    if (match === null) throw new Error(`WEIR_TEST_STORAGE_DELAY: "${part}" is not <metadata|discard>:[>=]<checkpoint id>:<ms>`);
    return { operation: match[1] as DelayedStorageOperation, andAbove: match[2] === '>=', checkpointId: Number(match[3]), ms: Number(match[4]) };
  });
}
