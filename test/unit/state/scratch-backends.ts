import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { AsyncKeyedStateSnapshot } from '../../../src/core/state/keyed-state-backend.ts';

/**
 * A test file's scratch folder for disk backends (`folder(prefix)`: a new one inside it), and what
 * disposes of them (`keep`), all removed after the file's tests.
 */
export function scratchBackends(name: string): { folder: (prefix: string) => string; keep: (dispose: () => Promise<void> | undefined) => void } {
  const root = mkdtempSync(join(tmpdir(), `weir-${name}-`));
  const disposers: (() => Promise<void> | undefined)[] = [];
  after(async () => {
    for (const dispose of disposers) await dispose();
    rmSync(root, { recursive: true, force: true });
  });
  return { folder: (prefix) => mkdtempSync(join(root, `${prefix}-`)), keep: (dispose) => disposers.push(dispose) };
}

/** A snapshot written to its end (awaiting work off the thread between steps): its bytes. */
export async function writtenSnapshot(writer: AsyncKeyedStateSnapshot): Promise<Uint8Array> {
  while (!writer.step(Number.POSITIVE_INFINITY)) await writer.waiting?.();
  return writer.result();
}
