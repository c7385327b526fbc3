import type { CheckpointStorage } from './checkpoint-storage.ts';
import { FileSystemCheckpointStorage } from './file-system-checkpoint-storage.ts';
import { S3CheckpointStorage } from './s3/s3-checkpoint-storage.ts';
import { isS3Url, parseS3Url } from './s3/s3-url.ts';

/**
 * The checkpoint storage a `checkpointing.storage` setting names: `s3://bucket/prefix` is an S3
 * (or S3-compatible) bucket, anything else a folder. The coordinator, the tasks and the
 * completed-checkpoint store only use the {@link CheckpointStorage} contract.
 */
export function openCheckpointStorage(setting: string): CheckpointStorage {
  return isS3Url(setting) ? new S3CheckpointStorage(setting) : new FileSystemCheckpointStorage(setting);
}

/**
 * A storage that reads the checkpoint or savepoint at `path` (a restore may name one of another
 * storage than the job's: a folder's savepoint for a job on S3, say): the job's `storage` when it
 * is of the same kind and bucket, else one opened on the path's own root.
 */
export function storageFor(path: string, storage: CheckpointStorage | undefined): CheckpointStorage {
  if (storage !== undefined && isS3Url(path) === isS3Url(storage.root)) {
    if (!isS3Url(path) || parseS3Url(path).bucket === parseS3Url(storage.root).bucket) return storage;
  }
  return isS3Url(path) ? new S3CheckpointStorage(`s3://${parseS3Url(path).bucket}`) : new FileSystemCheckpointStorage(path);
}
