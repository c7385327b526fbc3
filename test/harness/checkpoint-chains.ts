/** The completed checkpoints of a job's checkpoint folder, and whether every file they name is there (incremental checkpoints' chains). */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CheckpointMetadata, stateFilesOf } from '../../src/checkpoint/storage/checkpoint-metadata.ts';

/** The completed checkpoints in `<folder>/checkpoints`, by id. */
export function completedCheckpoints(folder: string): Map<number, CheckpointMetadata> {
  const dir = join(folder, 'checkpoints');
  const found = new Map<number, CheckpointMetadata>();
  if (!existsSync(dir)) return found;
  for (const name of readdirSync(dir)) {
    const match = /^chk-(\d+)$/.exec(name);
    if (match === null || !existsSync(join(dir, name, '_metadata'))) continue;
    try {
      found.set(Number(match[1]), JSON.parse(readFileSync(join(dir, name, '_metadata'), 'utf8')) as CheckpointMetadata);
    } catch {
      // being written or deleted this instant
    }
  }
  return found;
}

/** Every file the completed checkpoints name is there (retention never deleted what a kept checkpoint needs). */
export function assertChainsIntact(folder: string): void {
  for (const [id, metadata] of completedCheckpoints(folder)) {
    for (const handle of stateFilesOf(metadata)) {
      const file = join(folder, 'checkpoints', `chk-${handle.checkpoint ?? id}`, handle.path);
      assert.ok(existsSync(file), `checkpoint ${id} names ${file}, which retention deleted`);
    }
  }
}
