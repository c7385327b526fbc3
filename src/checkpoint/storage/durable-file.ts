import { open } from 'node:fs/promises';

/**
 * Writes a whole file and fsyncs it before returning. `flag` is `wx` to refuse an existing file or
 * `w` to replace it. The file's name is durable only once its folder is synced ({@link syncDirectory}).
 */
export async function writeFileDurably(path: string, bytes: Uint8Array | string, flag: 'w' | 'wx'): Promise<void> {
  const handle = await open(path, flag);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Fsyncs a folder, so the names created, renamed or removed in it survive a crash. */
export async function syncDirectory(path: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } catch (error) {
    // Windows cannot open a folder as a file; its file system orders metadata writes itself.
    if (process.platform === 'win32' && isCode(error, 'EISDIR', 'EPERM', 'EACCES')) return;
    throw error;
  }
  try {
    await handle.sync();
  } catch (error) {
    if (!isCode(error, 'EINVAL', 'EPERM', 'EISDIR')) throw error; // some file systems cannot fsync a folder
  } finally {
    await handle.close();
  }
}

function isCode(error: unknown, ...codes: string[]): boolean {
  return error instanceof Error && codes.includes((error as NodeJS.ErrnoException).code ?? '');
}
