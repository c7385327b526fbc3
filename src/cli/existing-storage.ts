import { existsSync } from 'node:fs';
import type { CheckpointStorage } from '../checkpoint/storage/checkpoint-storage.ts';
import { openCheckpointStorage } from '../checkpoint/storage/open-checkpoint-storage.ts';
import { isS3Url } from '../checkpoint/storage/s3/s3-url.ts';
import { WeirError } from '../core/errors/weir-error.ts';

/** A job's checkpoint storage a command reads (a folder that must exist, or s3://), never created here. */
export function existingStorage(root: string): CheckpointStorage {
  if (!isS3Url(root) && !existsSync(root)) {
    throw new WeirError('NO_CHECKPOINT_FOLDER', `${root} does not exist`, {
      hint: "give the job's checkpointing.storage (what `weir run` was given as --checkpoint-storage, or its config's)",
    });
  }
  return openCheckpointStorage(root);
}
