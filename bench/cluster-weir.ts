/**
 * `weir run` processes of bench:cluster's cases on the job of bench:compare
 * (bench/jobs/compare-weir-job.ts: read, parse, keyBy, running count per key, write exactly-once),
 * one process or a cluster member, and how they stop. Their stderr is kept for the report's errors.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuOf } from './compare/cpu-of.ts';

const root = join(import.meta.dirname, '..');
export const COMPARE_JOB = join(root, 'bench', 'jobs', 'compare-weir-job.ts');

export interface WeirProcess {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<unknown>;
  /** CPU seconds (every thread) so far; 0 once it has ended. */
  cpu: () => number;
}

/** `weir run <compare job> --checkpoint-storage <storage> --no-ui <args>` on input `input`, output `output`. */
export function startCompareJob(bootstrap: string, io: { input: string; output: string }, storage: string, args: string[]): WeirProcess {
  const child = spawn(process.execPath, [join(root, 'bin', 'weir.js'), 'run', COMPARE_JOB, '--checkpoint-storage', storage, '--no-ui', ...args], {
    env: { ...process.env, KAFKA_BROKERS: bootstrap, BC_INPUT: io.input, BC_OUTPUT: io.output, BC_BOUNDED: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.length > 1 << 20) stderr = stderr.slice(-(1 << 19));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { child, stderr: () => stderr, exited, cpu: () => cpuOf(child.pid as number) };
}

/** SIGTERM, then SIGKILL after 20 s; or SIGKILL at once (`kill`: nothing of its open transactions is read after). */
export async function stopWeir(proc: WeirProcess, kill = false): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill(kill ? 'SIGKILL' : 'SIGTERM');
  await Promise.race([proc.exited, sleep(20_000)]);
  proc.child.kill('SIGKILL');
}

/** The last lines of a process's stderr, for an error message. */
export function tailOf(proc: WeirProcess, lines = 15): string {
  return proc.stderr().trimEnd().split('\n').slice(-lines).join('\n');
}
