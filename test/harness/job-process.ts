/** Runs a job in a child process (test/fixtures/run-job.ts), so a test can SIGKILL the whole process. */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const runner = join(import.meta.dirname, '..', 'fixtures', 'run-job.ts');

export interface JobProcess {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A run that has not exited after `timeoutMs` (default 3 minutes) is killed, and says so in its stderr, so a hang fails the test instead of stalling CI. */
export function startJobProcess(jobModule: string, config: object, env: Record<string, string>, timeoutMs = 180_000): JobProcess {
  const child = spawn(process.execPath, [runner, jobModule, JSON.stringify(config)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: JobProcess = {
    child,
    stdout: '',
    stderr: '',
    exit: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  };
  const timer = setTimeout(() => {
    run.stderr += `\n[test harness] the job did not exit within ${timeoutMs} ms: killed. Its stdout:\n${run.stdout}\n`;
    child.kill('SIGKILL');
  }, timeoutMs);
  void run.exit.then(() => clearTimeout(timer));
  child.stdout?.on('data', (chunk: Buffer) => {
    run.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    run.stderr += chunk.toString();
  });
  return run;
}

/** Polls `condition` until it holds; fails after `timeoutMs`, naming `what`. */
export async function waitFor(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
