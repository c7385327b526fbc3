/**
 * The systems of the side-by-side benchmark and how each one is built and started as its own OS
 * process (so that it can be SIGKILLed and restarted, and its peak RSS is the whole process's).
 * A restart is the same command again: each system resumes from what its folder and Kafka hold.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { WEIR_V8_FLAGS } from '../../scripts/weir-v8-flags.ts';

const run = promisify(execFile);

export type SystemName = 'weir' | 'flink' | 'kafka-streams' | 'raw';

export const SYSTEM_LABELS: Record<SystemName, string> = {
  weir: 'Weir',
  flink: 'Apache Flink 2.0',
  'kafka-streams': 'Kafka Streams 4.1',
  raw: 'raw client pipe',
};

export interface StartSettings {
  bootstrap: string;
  input: string;
  output: string;
  parallelism: number;
  intervalMs: number;
  /** This run's own folder: checkpoints, state, logs. */
  folder: string;
  /** A name unique to this run: transactional id prefix, application id, group id. */
  runName: string;
  /** Extra JVM options (--jvm-opts). */
  jvmOptions: string[];
  /** Extra node options for Weir and the raw pipe, e.g. --cpu-prof; passed in NODE_OPTIONS, so worker threads get them too. */
  nodeOptions: string[];
  /** Weir and the raw pipe: stop at the input's end (profiling only). */
  bounded?: boolean;
}

const benchDir = join(import.meta.dirname, '..');
const repoDir = join(benchDir, '..');
const peersDir = join(benchDir, 'peers');

/** Flink's own list of --add-opens for Java 17 (from its distribution's env.java.opts.all). */
const FLINK_JAVA_OPENS = [
  'java.base/java.lang',
  'java.base/java.net',
  'java.base/java.io',
  'java.base/java.nio',
  'java.base/sun.nio.ch',
  'java.base/java.lang.reflect',
  'java.base/java.text',
  'java.base/java.time',
  'java.base/java.util',
  'java.base/java.util.concurrent',
  'java.base/java.util.concurrent.atomic',
  'java.base/java.util.concurrent.locks',
].flatMap((name) => ['--add-opens', `${name}=ALL-UNNAMED`]);

interface Peer {
  dir: string;
  mainClass: string;
}

const PEERS: Record<'flink' | 'kafka-streams', Peer> = {
  flink: { dir: join(peersDir, 'flink'), mainClass: 'dev.weir.bench.FlinkCountJob' },
  'kafka-streams': { dir: join(peersDir, 'kafka-streams'), mainClass: 'dev.weir.bench.StreamsCountJob' },
};

/** The newest modification time of a folder's files, recursively. */
function newestIn(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestIn(join(path, entry)));
  return newest;
}

/**
 * Builds a Java peer with Maven (`mvn compile`, which also writes target/classpath.txt) unless its
 * last build (target/weir-bench-built) is newer than its POM and sources and every jar it lists is
 * still there. The first build downloads the dependencies to Maven's local repository (~/.m2).
 */
export async function buildPeer(name: 'flink' | 'kafka-streams', log: (line: string) => void): Promise<void> {
  const peer = PEERS[name];
  const stamp = join(peer.dir, 'target', 'weir-bench-built');
  const sources = Math.max(newestIn(join(peer.dir, 'pom.xml')), newestIn(join(peer.dir, 'src')));
  const classpath = join(peer.dir, 'target', 'classpath.txt');
  const jarsThere = () =>
    readFileSync(classpath, 'utf8')
      .trim()
      .split(':')
      .every((jar) => existsSync(jar));
  if (existsSync(stamp) && statSync(stamp).mtimeMs > sources && existsSync(join(peer.dir, 'target', 'classes')) && jarsThere()) return;
  log(`building the ${SYSTEM_LABELS[name]} peer with Maven (dependencies are fetched to ~/.m2 on first use)...`);
  try {
    await run('mvn', ['-B', '-q', '-f', join(peer.dir, 'pom.xml'), 'compile'], { maxBuffer: 64 * 1024 * 1024 });
    await writeFile(stamp, `${new Date().toISOString()}\n`);
  } catch (error) {
    const output = error as { stdout?: string; stderr?: string };
    throw new Error(`building ${peer.dir} failed:\n${`${output.stdout ?? ''}${output.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n')}`);
  }
}

export function javaClasspath(name: 'flink' | 'kafka-streams'): string {
  const peer = PEERS[name];
  return `${join(peer.dir, 'target', 'classes')}:${readFileSync(join(peer.dir, 'target', 'classpath.txt'), 'utf8').trim()}`;
}

function nodeEnv(settings: StartSettings): NodeJS.ProcessEnv {
  if (settings.nodeOptions.length === 0) return process.env;
  return { ...process.env, NODE_OPTIONS: [process.env.NODE_OPTIONS ?? '', ...settings.nodeOptions].join(' ').trim() };
}

/** The command line that starts a system; the same command restarts it. */
export function commandOf(system: SystemName, settings: StartSettings): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  const { bootstrap, input, output, parallelism, intervalMs, folder, runName } = settings;
  switch (system) {
    case 'weir':
      return {
        command: process.execPath,
        args: [
          join(repoDir, 'bin', 'weir.js'),
          'run',
          join(benchDir, 'jobs', 'compare-weir-job.ts'),
          '--parallelism',
          String(parallelism),
          '--checkpoint-interval',
          `${intervalMs}ms`,
          '--checkpoint-storage',
          join(folder, 'weir-checkpoints'),
          '--no-ui',
        ],
        env: { ...nodeEnv(settings), KAFKA_BROKERS: bootstrap, BC_INPUT: input, BC_OUTPUT: output, BC_BOUNDED: settings.bounded ? '1' : '0' },
      };
    case 'raw':
      return {
        command: process.execPath,
        args: [
          // As `weir run` sets them (bin/weir.js): records are short-lived, so no allocation-site
          // pretenuring; external memory within V8's global heap limit (Node 24).
          ...WEIR_V8_FLAGS,
          ...settings.nodeOptions,
          join(benchDir, 'compare', 'raw-pipe.ts'),
          bootstrap,
          input,
          output,
          String(parallelism),
          settings.bounded ? 'bounded' : 'unbounded',
        ],
        env: nodeEnv(settings),
      };
    case 'flink':
      return {
        command: 'java',
        args: [
          ...FLINK_JAVA_OPENS,
          ...settings.jvmOptions,
          '-cp',
          javaClasspath('flink'),
          PEERS.flink.mainClass,
          bootstrap,
          input,
          output,
          String(parallelism),
          String(intervalMs),
          join(folder, 'flink-checkpoints'),
          `${runName}-flink`,
          `${runName}-flink`,
        ],
        env: process.env,
      };
    case 'kafka-streams':
      return {
        command: 'java',
        args: [
          ...settings.jvmOptions,
          '-cp',
          javaClasspath('kafka-streams'),
          PEERS['kafka-streams'].mainClass,
          bootstrap,
          input,
          output,
          String(parallelism),
          String(intervalMs),
          join(folder, 'kafka-streams-state'),
          `${runName}-streams`,
        ],
        env: process.env,
      };
  }
}

/** Starts a system in the background, its output appended to `logFile`. */
export function startSystem(system: SystemName, settings: StartSettings, logFile: string): ChildProcess {
  const { command, args, env } = commandOf(system, settings);
  const out = openSync(logFile, 'a');
  try {
    return spawn(command, args, { env, stdio: ['ignore', out, out], cwd: repoDir });
  } finally {
    closeSync(out);
  }
}

/** Peak resident memory (VmHWM) of a process, sampled from /proc while it runs. */
export class PeakRss {
  peakKb = 0;
  readonly #timer: NodeJS.Timeout;
  readonly #pid: number;

  constructor(pid: number) {
    this.#pid = pid;
    this.#timer = setInterval(() => this.sample(), 200);
  }

  sample(): void {
    try {
      const status = readFileSync(`/proc/${this.#pid}/status`, 'utf8');
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      if (kb > this.peakKb) this.peakKb = kb;
    } catch {
      // the process is gone
    }
  }

  stop(): void {
    this.sample();
    clearInterval(this.#timer);
  }
}

/** Waits for a child to exit; SIGKILLs it after graceMs. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
