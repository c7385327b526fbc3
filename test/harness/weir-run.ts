/** `weir run` as a child process, as a user starts it, for tests that act on a running job. */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { repositoryRoot } from './cli.ts';

/** Polls `probe` until it gives a value (errors count as "not yet"); fails after `timeoutMs`, naming `what`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export interface WeirRun {
  child: ChildProcess;
  exited: Promise<number | null>;
  stderr(): string;
  stdout(): string;
  /** The first match of `pattern` in the job's stderr; fails when the job exits or time runs out first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** The address the job serves its dashboard and REST API at (it prints it; start it with --ui-port 0). */
  url(): Promise<string>;
}

/** Starts `weir run <args>` with `env` over this process's environment; `wrap` runs it under another command (`ip netns exec <ns>`). */
export function startWeirRun(args: string[], env: NodeJS.ProcessEnv = {}, wrap: string[] = []): WeirRun {
  const command = [...wrap, process.execPath, join(repositoryRoot, 'bin', 'weir.js'), 'run', ...args];
  const child = spawn(command[0] as string, command.slice(1), {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let stdout = '';
  // WEIR_TEST_RUN_LOGS=<folder> keeps every run's stderr in <folder>/<pid>.log, for a test that timed out.
  const logFolder = process.env.WEIR_TEST_RUN_LOGS;
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (logFolder) appendFileSync(join(logFolder, `${child.pid}.log`), chunk);
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const waitFor = async (pattern: RegExp, timeoutMs = 120_000): Promise<RegExpExecArray> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = pattern.exec(stderr);
      if (match !== null) return match;
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`no ${pattern} in the job's output:\n${stderr}`);
      await sleep(20);
    }
  };
  return {
    child,
    exited,
    stderr: () => stderr,
    stdout: () => stdout,
    waitFor,
    url: async () => (await waitFor(/dashboard at (http:\/\/127\.0\.0\.1:\d+)\//))[1] as string,
  };
}
