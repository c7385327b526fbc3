/** Runs the `weir` command as a user would, and returns its exit code and output. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const repositoryRoot = join(import.meta.dirname, '..', '..');

export async function weir(args: string[], env: NodeJS.ProcessEnv = {}, replaceEnv = false): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(repositoryRoot, 'bin', 'weir.js'), ...args], {
      env: replaceEnv ? env : { ...process.env, ...env },
      timeout: 180_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}
