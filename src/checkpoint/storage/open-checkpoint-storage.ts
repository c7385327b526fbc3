import type { CheckpointStorage } from './checkpoint-storage.ts';
import { FileSystemCheckpointStorage } from './file-system-checkpoint-storage.ts';

/**
 * The checkpoint storage a `checkpointing.storage` setting names. Today that is a folder (any path);
 * an object store will be told apart by its URL scheme here, and nothing else changes: the
 * coordinator, the tasks and the completed-checkpoint store only use the {@link CheckpointStorage}
 * contract.
 */
export function openCheckpointStorage(setting: string): CheckpointStorage {
  return new FileSystemCheckpointStorage(setting);
}
