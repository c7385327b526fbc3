import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KeyGroupRange } from '../../../../src/state/key-group-range.ts';
import { LmdbKeyedStateBackend } from '../../../../src/state/lmdb-keyed-state-backend.ts';

/** Every backend of the redirected tests works in a folder under this one (deleted by the runner). */
export const DISK_TEST_ROOT = join(tmpdir(), 'weir-disk-backend-tests');

/**
 * Stands in for HeapKeyedStateBackend in the heap backend's own unit tests (disk-keyed-state-backend.test.ts
 * redirects their import here): the same cases run against the disk backend.
 */
export class HeapKeyedStateBackend extends LmdbKeyedStateBackend {
  constructor(options: { maxParallelism: number; keyGroupRange: KeyGroupRange; operatorName: string; clock?: () => number; reinterpreted?: boolean }) {
    mkdirSync(DISK_TEST_ROOT, { recursive: true });
    super({ ...options, dir: mkdtempSync(join(DISK_TEST_ROOT, 'b-')), settings: { writeBufferEntries: 64 } });
  }
}
