import type { CheckpointLocation } from './checkpoint-location.ts';
import type { StateHandle } from './checkpoint-metadata.ts';
import type { CheckpointStorage } from './checkpoint-storage.ts';

/**
 * One state file's pieces, checked against its handle once the last is read: the storage's own
 * streaming reader (CheckpointStorage.readStatePieces), else the whole file from readState as one piece.
 */
export async function* readStatePieces(storage: CheckpointStorage, location: CheckpointLocation | string, handle: StateHandle): AsyncGenerator<Uint8Array> {
  if (storage.readStatePieces !== undefined) {
    yield* storage.readStatePieces(location, handle);
    return;
  }
  yield await storage.readState(location, handle);
}
