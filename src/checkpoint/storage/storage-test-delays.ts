import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseCheckpointFolderName, parseSavepointFolderName } from './checkpoint-folder-name.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';

/**
 * Delays of storage operations for the crash tests, off unless WEIR_TEST_STORAGE_DELAY names them:
 * `WEIR_TEST_STORAGE_DELAY=<operation>:[>=]<checkpoint id>:<ms>[,...]` holds that operation on
 * that checkpoint or savepoint (or on every one from that id on, with `>=`) for `ms` before it does anything, so a test can fail a task, stop the
 * process or kill it while, say, a checkpoint's `_metadata` is being written. Operations:
 *
 * - `metadata`: {@link CheckpointStorage.commitMetadata} (before anything is written);
 * - `discard`: {@link CheckpointStorage.discard} (before anything is deleted);
 * - `state`: a task's asynchronous part: {@link CheckpointStorage.writeState} before its file is written, a
 *   streamed state file (the file system's `openState`) once its first pieces are written (the file partly there);
 * - `base`: a disk backend's base written beside the chain (a `keyed-base` file), once its first pieces are written;
 * - `restore`: {@link CheckpointStorage.readState} (a task restoring, before its file is read).
 */
const delays = parse(process.env.WEIR_TEST_STORAGE_DELAY);

interface Delay {
  operation: DelayedStorageOperation;
  checkpointId: number;
  /** Also every checkpoint above `checkpointId` (`>=<id>`). */
  andAbove: boolean;
  ms: number;
}

export type DelayedStorageOperation = 'metadata' | 'discard' | 'state' | 'base' | 'restore';

/** Waits as WEIR_TEST_STORAGE_DELAY asks for this operation on this location (at once when it asks nothing). */
export async function storageTestDelay(operation: DelayedStorageOperation, location: CheckpointLocation | string, detail = ''): Promise<void> {
  if (delays === undefined) return;
  const id = typeof location === 'string' ? idOfFolder(location) : location.checkpointId;
  if (id === undefined) return;
  const ms = delays?.find((delay) => delay.operation === operation && (delay.andAbove ? id >= delay.checkpointId : id === delay.checkpointId))?.ms;
  if (ms === undefined) return;
  const what = typeof location === 'string' ? `checkpoint ${id}` : `${location.kind} ${id}`;
  process.stderr.write(`weir: WEIR_TEST_STORAGE_DELAY: holding ${operation} of ${what}${detail} for ${ms} ms\n`);
  await sleep(ms);
}

function parse(spec: string | undefined): Delay[] | undefined {
  if (spec === undefined || spec === '') return undefined;
  return spec.split(',').map((part) => {
    const match = /^(metadata|discard|state|base|restore):(>=)?(\d+):(\d+)$/.exec(part.trim());
    if (match === null) throw new Error(`WEIR_TEST_STORAGE_DELAY: "${part}" is not <metadata|discard|state|base|restore>:[>=]<checkpoint id>:<ms>`);
    return { operation: match[1] as DelayedStorageOperation, andAbove: match[2] === '>=', checkpointId: Number(match[3]), ms: Number(match[4]) };
  });
}

/** The checkpoint id of a checkpoint's or savepoint's folder (a restore names one by its path). */
function idOfFolder(path: string): number | undefined {
  const name = basename(path.replace(/\/+$/, '').replace(/\/_metadata$/, ''));
  return parseCheckpointFolderName(name) ?? parseSavepointFolderName(name);
}
