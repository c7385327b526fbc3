import { basename, join } from 'node:path';
import type { CheckpointStorage } from '../checkpoint/storage/checkpoint-storage.ts';
import { openCheckpointStorage } from '../checkpoint/storage/open-checkpoint-storage.ts';
import { isS3Url } from '../checkpoint/storage/s3/s3-url.ts';
import type { OpenTransaction } from '../connectors/kafka/transaction-driver.ts';
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
  } catch {
    // left for a later sweep, or for whoever empties the storage
  }
}
