import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** How far the demo's writer is: payments written so far, how many it may write by now (each run gets its share), and whether it is done. */
export interface WriteProgress {
  written: number;
  allowed: number;
  done: boolean;
}

interface VertexProgress {
  id: number;
  name: string;
  recordsIn: number;
  recordsInPerSecond: number;
  operators: Record<string, number>;
}

interface JobProgress {
  state?: string;
  latestCheckpointId?: number;
  vertices: VertexProgress[];
  edges?: { source: number; target: number }[];
}

/** What the demo knows of the job at its last poll: whether it runs, what its sources read this run, and how far behind its input it is. */
export interface JobProgressSample {
  running: boolean;
  readThisRun: number;
  /** Records read per second since the poll before (0 before two polls). */
  readPerSecond: number;
  lag: bigint;
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
  let sample: JobProgressSample | undefined;
  let previous: { at: number; read: number } | undefined;
  const poller = setInterval(() => {
    if (url === undefined) return;
    Promise.all([fetch(`${url}/api/job`).then((response) => response.json() as Promise<JobProgress>), lag.total()])
      .then(([job, behind]) => {
        // What the job reads: the records into its source vertices (those no edge leads to), this run.
        const targets = new Set((job.edges ?? []).map((edge) => edge.target));
        const read = job.vertices.filter((vertex) => !targets.has(vertex.id)).reduce((sum, vertex) => sum + vertex.recordsIn, 0);
        const now = Date.now();
        const perSecond = previous === undefined || now <= previous.at ? 0 : Math.max(0, ((read - previous.read) * 1000) / (now - previous.at));
        previous = { at: now, read };
        sample = { running: job.state === 'running', readThisRun: read, readPerSecond: perSecond, lag: behind };
        let committed = 0;
        for (const vertex of job.vertices) {
          for (const [name, value] of Object.entries(vertex.operators)) if (name.endsWith('.transactions.committed')) committed += value;
        }
        const reading = sample.running ? `job read ${number(read)} this run (${number(Math.round(perSecond))}/s)` : `job ${job.state ?? 'starting'}`;
        log(
          `  progress: ${number(written.written)} of ${number(records)} payments written; ${reading}, lag ${number(behind)}, checkpoint ${job.latestCheckpointId ?? 'none'}, ${committed} transactions committed`,
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
    /** The last poll's view of the job; undefined before the first. */
    progress: () => sample,
    /**
     * Resolves with the lag once the job is at work: it runs and has input left to read (the
     * lag, asked of the broker every 100 ms, is above 0); undefined after `timeoutMs` or its exit.
     */
    busy: async (timeoutMs: number): Promise<bigint | undefined> => {
      const deadline = Date.now() + timeoutMs;
      while (child.exitCode === null && Date.now() < deadline) {
        if (sample?.running === true) {
          const behind = await lag.total().catch(() => 0n);
          if (behind > 0n) return behind;
        }
        await sleep(100);
      }
      return undefined;
    },
    stderr: () => stderr + stdout,
    waitFor: async (pattern: RegExp, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(stderr) && child.exitCode === null && Date.now() < deadline) await sleep(20);
    },
  };
}
