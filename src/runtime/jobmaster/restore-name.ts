import type { RestoreInfo } from '../deployment/restore-info.ts';

/** What a start or restart restores, as the log names it: "savepoint 7" or "checkpoint 12". */
export function restoreName(restore: RestoreInfo): string {
  return `${restore.kind ?? 'checkpoint'} ${restore.checkpointId}`;
}
