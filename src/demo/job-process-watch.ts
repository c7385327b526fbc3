import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** How far the demo's writer is: payments written so far, and whether it is done. */
export interface WriteProgress {
  written: number;
  done: boolean;
}

interface VertexProgress {
  name: string;
  recordsIn: number;
  recordsInPerSecond: number;
  operators: Record<string, number>;
}

/**
 * Relays a job process's progress lines and lets the caller wait for one; every second it asks
 * the job's REST API how far it is and prints it with the consumer group's lag.
 */
export function watchJobProcess(child: ChildProcess, log: (line: string) => void, records: number, written: WriteProgress, lag: { total(): Promise<bigint> }) {
  let stdout = '';
  let stderr = '';
  let url: string | undefined;
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  let partial = ''; // a chunk may end inside a line
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stderr += text;
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (/starting job|every input has ended/.test(line)) log(`  job: ${line.trim().replace(/^\[[\d:.]+\] [A-Z]+: /, '')}`); // without the log's time and level
      const dashboard = /dashboard at (http:\/\/[^/\s]+)\//.exec(line);
      if (dashboard !== null) {
        url = dashboard[1];
        log(`  job: dashboard at ${url}/ (open it in a browser while the job runs)`);
      }
    }
  });
  const number = (n: number | bigint) => n.toLocaleString('en-US');
  const poller = setInterval(() => {
    if (url === undefined) return;
    Promise.all([
      fetch(`${url}/api/job`).then((response) => response.json() as Promise<{ latestCheckpointId?: number; vertices: VertexProgress[] }>),
      lag.total(),
    ])
      .then(([job, behind]) => {
        const source = job.vertices[0];
        if (source === undefined) return;
        let committed = 0;
        for (const vertex of job.vertices) {
          for (const [name, value] of Object.entries(vertex.operators)) if (name.endsWith('.transactions.committed')) committed += value;
        }
        log(
          `  progress: ${number(written.written)} of ${number(records)} payments written; job read ${number(source.recordsIn)} this run (${number(Math.round(source.recordsInPerSecond))}/s), lag ${number(behind)}, checkpoint ${job.latestCheckpointId ?? 'none'}, ${committed} transactions committed`,
        );
      })
      .catch(() => {}); // the job is starting, ending or was just killed
  }, 1000);
  const exit = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      clearInterval(poller);
      done(code);
    }),
  );
  return {
    exit,
    url: () => url,
    stderr: () => stderr + stdout,
    waitFor: async (pattern: RegExp, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(stderr) && child.exitCode === null && Date.now() < deadline) await sleep(20);
    },
  };
}
