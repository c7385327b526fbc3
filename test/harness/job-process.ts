/** Runs a job in a child process (test/fixtures/run-job.ts), so a test can SIGKILL the whole process. */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const runner = join(import.meta.dirname, '..', 'fixtures', 'run-job.ts');

export interface JobProcess {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startJobProcess(jobModule: string, config: object, env: Record<string, string>): JobProcess {
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
  child.stdout?.on('data', (chunk: Buffer) => {
    run.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    run.stderr += chunk.toString();
  });
  return run;
}
