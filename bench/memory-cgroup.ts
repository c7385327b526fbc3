/**
 * A memory cgroup of the benchmark's own (Linux, root): a child process started in it cannot hold
 * more than `limitMb` of memory, its anonymous memory and the page cache it uses (an lmdb file's
 * pages) together; at the limit the kernel drops clean file pages, and a process whose own memory
 * does not fit is killed (OOM). cgroup v1 (`memory.limit_in_bytes`) and v2 (`memory.max`).
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  /** The command that runs `argv` inside the cgroup (a shell that moves itself in, then execs). */
  wrap(argv: readonly string[]): { command: string; args: string[] };
  /** The most memory the cgroup held (anonymous and page cache), in MB. */
  peakMb(): number;
  /** How often the limit was hit (v1: memory.failcnt; v2: the max events). */
  limitHits(): number;
  remove(): void;
}

export function createMemoryCgroup(limitMb: number, name: string): MemoryCgroup {
  const lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v1 = lines.find((line) => /^\d+:memory:/.test(line));
  const v2 = lines.find((line) => line.startsWith('0::'));
  const folder =
    v1 !== undefined
      ? join('/sys/fs/cgroup/memory', v1.split(':')[2] as string, name)
      : v2 !== undefined
        ? join('/sys/fs/cgroup', v2.slice(3), name)
        : undefined;
  if (folder === undefined) throw new Error('--memory-limit needs a Linux memory cgroup (v1 or v2) in /proc/self/cgroup');
  try {
    mkdirSync(folder);
  } catch (error) {
    throw new Error(`--memory-limit: cannot create the cgroup ${folder} (root, and a writable cgroup file system, are needed): ${(error as Error).message}`);
  }
  const file = (v1Name: string, v2Name: string) => join(folder, v1 !== undefined ? v1Name : v2Name);
  writeFileSync(file('memory.limit_in_bytes', 'memory.max'), String(limitMb * 1024 * 1024));
  const read = (path: string) => readFileSync(path, 'utf8').trim();
  return {
    wrap: (argv) => ({
      command: '/bin/sh',
      args: ['-c', `echo $$ > '${join(folder, 'cgroup.procs')}' && exec "$@"`, 'sh', ...argv],
    }),
    peakMb: () => Number(read(file('memory.max_usage_in_bytes', 'memory.peak'))) / 1024 / 1024,
    limitHits: () =>
      v1 !== undefined ? Number(read(join(folder, 'memory.failcnt'))) : Number(/^max (\d+)/m.exec(read(join(folder, 'memory.events')))?.[1] ?? 0),
    remove: () => {
      try {
        rmdirSync(folder);
      } catch {
        // still in use (a process left in it): the kernel keeps it until it is empty
      }
    },
  };
}
