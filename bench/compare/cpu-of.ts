import { readdirSync, readFileSync } from 'node:fs';

/** CPU seconds (user, system) and the name of a process or thread, from its `stat` file in /proc. */
function readStat(path: string): { name: string; user: number; system: number } {
  const stat = readFileSync(path, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

/** CPU seconds (user + system, every thread) a process has used so far, from /proc/<pid>/stat. */
export function cpuOf(pid: number): number {
  try {
    const { user, system } = readStat(`/proc/${pid}/stat`);
    return user + system;
  } catch {
    return 0;
  }
}

/** CPU seconds (user, system) of every thread of a process so far, by thread id; empty once it has ended. */
export function threadCpuOf(pid: number): Map<string, { name: string; user: number; system: number }> {
  const times = new Map<string, { name: string; user: number; system: number }>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return times;
  }
  for (const tid of tids) {
    try {
      times.set(tid, readStat(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // the thread has ended
    }
  }
  return times;
}
