import { mkdirSync, rmSync } from 'node:fs';
import { register } from 'node:module';
import { DISK_TEST_ROOT } from './disk-backend/heap-as-disk.ts';

/*
 * The heap backend's keyed-state unit tests, run against the disk backend (lmdb): the same files,
 * their import of HeapKeyedStateBackend redirected to a disk backend in a temporary folder
 * (disk-backend/redirect-hooks.ts). Cases that test what only the heap does are skipped by name,
 * with the reason (disk-backend/skipping-test.ts).
 */
rmSync(DISK_TEST_ROOT, { recursive: true, force: true });
mkdirSync(DISK_TEST_ROOT, { recursive: true });
process.on('exit', () => rmSync(DISK_TEST_ROOT, { recursive: true, force: true }));
register('./disk-backend/redirect-hooks.ts', import.meta.url);

await import('./heap-keyed-state-backend.test.ts');
await import('./timers.test.ts');
await import('./timer-namespaces.test.ts');
await import('./state-ttl.test.ts');
await import('./async-keyed-snapshot.test.ts');
await import('./incremental-keyed-snapshot.test.ts');
