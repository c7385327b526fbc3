/**
 * The names of the folders inside a checkpoint directory:
 *
 *   chk-<N>/                        checkpoint N
 *   savepoints/savepoint-<N>-<hex>/ a savepoint taken as checkpoint N
 *
 * N is written without leading zeros; folders whose names do not parse are not Weir's and are left alone.
 */

import { WeirError } from '../../core/errors/weir-error.ts';

export const SAVEPOINTS_FOLDER = 'savepoints';

/** Refuses what is not a checkpoint id (a whole number of at least 1). */
export function assertCheckpointId(checkpointId: number): void {
  if (!Number.isSafeInteger(checkpointId) || checkpointId < 1) {
    throw new WeirError('INVALID_CHECKPOINT_ID', `${checkpointId} is not a checkpoint id (a whole number of at least 1)`, { fault: 'internal' });
  }
}

const CHECKPOINT_FOLDER = /^chk-([1-9]\d*)$/;
const SAVEPOINT_FOLDER = /^savepoint-([1-9]\d*)-([0-9a-f]+)$/;

export function checkpointFolderName(checkpointId: number): string {
  return `chk-${checkpointId}`;
}

export function savepointFolderName(checkpointId: number, randomHex: string): string {
  return `savepoint-${checkpointId}-${randomHex}`;
}

/** The checkpoint id of a `chk-<N>` folder name, or undefined for any other name. */
export function parseCheckpointFolderName(name: string): number | undefined {
  return idOf(CHECKPOINT_FOLDER.exec(name)?.[1]);
}

/** The checkpoint id of a `savepoint-<N>-<hex>` folder name, or undefined for any other name. */
export function parseSavepointFolderName(name: string): number | undefined {
  return idOf(SAVEPOINT_FOLDER.exec(name)?.[1]);
}

function idOf(digits: string | undefined): number | undefined {
  if (digits === undefined) return undefined;
  const id = Number(digits);
  return Number.isSafeInteger(id) ? id : undefined;
}
