/**
 * Module hooks of disk-keyed-state-backend.test.ts: the heap backend's unit tests import
 * HeapKeyedStateBackend from this folder's heap-as-disk.ts instead, and node:test from
 * skipping-test.ts (which skips the cases that test what only the heap does).
 */
export async function resolve(
  specifier: string,
  context: { parentURL?: string },
  next: (specifier: string, context: object) => Promise<unknown>,
): Promise<unknown> {
  const parent = context.parentURL ?? '';
  if (parent.includes('/test/unit/state/') && !parent.includes('/disk-backend/')) {
    if (specifier.endsWith('/src/state/heap-keyed-state-backend.ts')) return next(new URL('./heap-as-disk.ts', import.meta.url).href, context);
    if (specifier === 'node:test' && !parent.endsWith('disk-keyed-state-backend.test.ts'))
      return next(new URL('./skipping-test.ts', import.meta.url).href, context);
  }
  return next(specifier, context);
}
