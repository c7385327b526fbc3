import { releaseBytes } from '../../core/heap/release-bytes.ts';
import type { CheckpointLocation } from './checkpoint-location.ts';
import type { CheckpointStorage, StateFileWriter } from './checkpoint-storage.ts';
import type { StateKind } from './state-file-name.ts';

/**
 * A writer of one subtask's state file: the storage's own streaming one (CheckpointStorage.openState),
 * else one that holds the pieces and hands them to writeState at {@link StateFileWriter.finish}
 * (the snapshot then sits in memory until written, as every snapshot did before streaming).
 */
export function openStateWriter(
  storage: CheckpointStorage,
  location: CheckpointLocation,
  operatorUid: string,
  subtaskIndex: number,
  kind: StateKind,
): Promise<StateFileWriter> {
  if (storage.openState !== undefined) return storage.openState(location, operatorUid, subtaskIndex, kind);
  const held: Uint8Array[] = [];
  let length = 0;
  return Promise.resolve({
    write: async (pieces) => {
      for (const piece of pieces) {
        held.push(piece);
        length += piece.byteLength;
      }
    },
    finish: async () => {
      const bytes = held.length === 1 ? (held[0] as Uint8Array) : Buffer.concat(held, length);
      if (held.length !== 1) for (const piece of held) releaseBytes(piece); // copied: freed now
      const handle = await storage.writeState(location, operatorUid, subtaskIndex, kind, bytes);
      releaseBytes(bytes);
      return handle;
    },
    abort: async () => {
      held.length = 0;
    },
  });
}
