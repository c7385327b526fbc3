import { basename, join } from 'node:path';
import type { CheckpointStorage } from '../checkpoint/storage/checkpoint-storage.ts';
import { openCheckpointStorage } from '../checkpoint/storage/open-checkpoint-storage.ts';
import { isS3Url } from '../checkpoint/storage/s3/s3-url.ts';
import type { OpenTransaction } from '../connectors/kafka/transaction-driver.ts';
import { injectedFault, injectedFaultPoint } from '../runtime/jobmaster/injected-fault.ts';
import { earlierOwnerFolders, ownerOfFolder } from './earlier-owner-folders.ts';
import type { Stage } from './stage-plan.ts';

/** A task's folder in the shared checkpoint storage, per owner (producer id and epoch): a zombie never writes where its successor does. */
export function taskStorageRoot(root: string, stage: Stage, task: number, open: OpenTransaction): string {
  const parts = ['tasks', `${stage.uid.replace(/[^A-Za-z0-9._-]+/g, '_')}-${task}`, `p${open.producerId}-e${open.producerEpoch}`];
  return isS3Url(root) ? [root.replace(/\/+$/, ''), ...parts].join('/') : join(root, ...parts);
}

/**
 * Deletes what a task's earlier owners left beside this owner's folder (`storage`): the owner
 * folders of the task with an older epoch than this owner's (all fenced once this owner committed,
 * so nothing they hold is referenced); never a newer owner's, so a zombie that wakes after its task
 * moved deletes nothing the live owner needs. Best effort: what is left now (a folder that would
 * not delete) or written later (a zombie that wakes) goes at a later sweep, or with the next owner.
 */
export async function discardEarlierOwners(storage: CheckpointStorage): Promise<void> {
  try {
    const mine = ownerOfFolder(basename(storage.root));
    if (mine === undefined) return;
    if (injectedFaultPoint === 'owner-sweep') await sweepFault(storage);
    const roots = await storage.neighbours();
    const earlierNames = new Set(
      earlierOwnerFolders(
        roots.map((root) => basename(root)),
        mine,
      ),
    );
    for (const root of roots) {
      if (!earlierNames.has(basename(root))) continue;
      const earlier = openCheckpointStorage(root);
      for (const entry of await earlier.listLocations('checkpoint')) await earlier.discard(entry).catch(() => {});
    }
    if (injectedFaultPoint === 'owner-sweep')
      process.stderr.write(`weir: WEIR_FAULT: swept beside ${storage.root}: ${[...earlierNames].join(', ') || 'nothing'}\n`);
  } catch (error) {
    // left for a later sweep, or for whoever empties the storage
    if (injectedFaultPoint === 'owner-sweep') process.stderr.write(`weir: WEIR_FAULT: sweep beside ${storage.root} failed: ${(error as Error).message}\n`);
  }
}

/** The `owner-sweep` test fault (injected-fault.ts) at the checkpoint just committed: this owner's newest. */
async function sweepFault(storage: CheckpointStorage): Promise<void> {
  const newest = Math.max(0, ...(await storage.listLocations('checkpoint')).map((location) => location.checkpointId));
  injectedFault('owner-sweep', newest, storage.root);
}
