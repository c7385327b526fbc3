/**
 * The names of the folders inside a checkpoint directory:
 *
 *   chk-<N>/                        checkpoint N
 *   savepoints/savepoint-<N>-<hex>/ a savepoint taken as checkpoint N
 *
 * N is written without leading zeros; folders whose names do not parse are not Weir's and are left alone.
 */

export const SAVEPOINTS_FOLDER = 'savepoints';

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
