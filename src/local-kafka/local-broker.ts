import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeCluster } from '../connectors/kafka/cluster-info.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { formatDuration } from '../core/time/duration.ts';
import { kafkaAssetsDir, requireCommand, resolveKafkaDistribution } from './kafka-classpath.ts';
import { freePorts, isPortFree } from './ports.ts';
import { serverProperties } from './server-properties.ts';

/**
 * A real single-node Apache Kafka broker (KRaft, broker and controller in one JVM) on 127.0.0.1,
 * for development, tests and the demo. Its data folder holds:
 *
 *   server.properties   written at every start
 *   broker.json         what runs: pid, ports, versions (removed on stop)
 *   format.json         how the storage was formatted: cluster id, controller port, transaction.version
 *   broker.log          the broker's own log
 *   kraft/              log.dirs
 */

export const DEFAULT_DATA_DIR = '.weir/kafka';
export const DEFAULT_PORT = 9092;
/** Kafka's default transaction.max.timeout.ms. */
export const DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 15 * 60 * 1000;

export interface StartOptions {
  dataDir?: string;
  port?: number;
  /** The KRaft controller's port; by default the one recorded at format time, else a free one. */
  controllerPort?: number;
  /** transaction.version to format with (Kafka 4.x defaults to 2). */
  transactionVersion?: 1 | 2;
  transactionMaxTimeoutMs?: number;
  /** Delete the data folder's storage and format it anew. */
  wipe?: boolean;
  heapMb?: number;
  startTimeoutMs?: number;
  /** Extra broker properties, written after Weir's own. */
  overrides?: Record<string, string>;
  /** Extra arguments of the storage format (a new data folder only), e.g. `--add-scram SCRAM-SHA-512=[name=u,password=p]`. */
  formatArgs?: string[];
  log?: (line: string) => void;
}

export interface BrokerState {
  version: 1;
  pid: number;
  host: string;
  port: number;
  controllerPort: number;
  kafkaVersion: string;
  transactionVersion: number;
  transactionMaxTimeoutMs: number;
  dataDir: string;
  startedAt: string;
}

interface FormatRecord {
  version: 1;
  clusterId: string;
  controllerPort: number;
  transactionVersion: 1 | 2;
  kafkaVersion: string;
}

export interface BrokerStatus {
  running: boolean;
  dataDir: string;
  state?: BrokerState;
  /** The transaction.version the running broker reports (may differ from the recorded one after a feature change). */
  transactionVersion?: number;
  /** Set when the process runs but does not answer. */
  problem?: string;
}

const HOST = '127.0.0.1';

export function bootstrapOf(state: Pick<BrokerState, 'host' | 'port'>): string {
  return `${state.host}:${state.port}`;
}

/** Formats (when needed) and starts the broker in the background, and waits until it answers. */
export async function startLocalBroker(options: StartOptions = {}): Promise<BrokerState> {
  const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  const port = options.port ?? DEFAULT_PORT;
  const log = options.log ?? (() => {});
  const transactionMaxTimeoutMs = options.transactionMaxTimeoutMs ?? DEFAULT_TRANSACTION_MAX_TIMEOUT_MS;

  const running = readRunningState(dataDir);
  if (running !== undefined) {
    throw new WeirError('BROKER_ALREADY_RUNNING', `a local broker is already running at ${bootstrapOf(running)} (pid ${running.pid}, data ${dataDir})`, {
      hint: 'use it as it is, or stop it first with `weir kafka stop`',
    });
  }

  await requireCommand('java', ['-version'], 'Java (java)', 'install Java 17 or newer (for example `apt-get install openjdk-17-jre-headless`)');
  if (!(await isPortFree(port))) {
    throw new WeirError('PORT_TAKEN', `port ${port} on ${HOST} is taken by another program`, {
      hint: `pass --port <another port>, or stop what listens on ${port}`,
    });
  }

  await mkdir(dataDir, { recursive: true });
  const distribution = await resolveKafkaDistribution(log);
  const logDirs = join(dataDir, 'kraft');
  if (options.wipe) {
    await rm(logDirs, { recursive: true, force: true });
    await rm(join(dataDir, 'format.json'), { force: true });
  }

  let format = readFormatRecord(dataDir);
  if (format !== undefined && !existsSync(join(logDirs, 'meta.properties'))) format = undefined;
  if (format !== undefined && options.transactionVersion !== undefined && options.transactionVersion !== format.transactionVersion) {
    throw new WeirError(
      'BROKER_FORMAT_MISMATCH',
      `the data folder ${dataDir} was formatted with transaction.version=${format.transactionVersion}, not ${options.transactionVersion}`,
      { hint: 'pass --wipe to format it anew (its topics are deleted), or use another --data-dir' },
    );
  }
  if (format !== undefined && options.controllerPort !== undefined && options.controllerPort !== format.controllerPort) {
    throw new WeirError(
      'BROKER_FORMAT_MISMATCH',
      `the data folder ${dataDir} was formatted with controller port ${format.controllerPort}, not ${options.controllerPort}`,
      {
        hint: 'leave --controller-port out, or pass --wipe to format it anew',
      },
    );
  }
  const controllerPort = format?.controllerPort ?? options.controllerPort ?? (await freePortBeside(port));
  if (controllerPort === port) {
    throw new WeirError('PORT_TAKEN', `the broker port and the controller port are both ${port}`, { hint: 'pass another --port or --controller-port' });
  }
  if (!(await isPortFree(controllerPort))) {
    throw new WeirError('PORT_TAKEN', `the controller port ${controllerPort} on ${HOST} is taken by another program`, {
      hint:
        format === undefined
          ? 'pass --controller-port <another port>'
          : `stop what listens on ${controllerPort}, or pass --wipe to format anew on another port`,
    });
  }

  const propertiesFile = join(dataDir, 'server.properties');
  await writeFile(propertiesFile, serverProperties({ host: HOST, port, controllerPort, logDirs, transactionMaxTimeoutMs, overrides: options.overrides ?? {} }));

  if (format === undefined) {
    const transactionVersion = options.transactionVersion ?? 2;
    await rm(logDirs, { recursive: true, force: true });
    const clusterId = kafkaUuid();
    log(`formatting a new KRaft cluster in ${logDirs} (transaction.version=${transactionVersion})`);
    await runJava(distribution.classpath, [
      'kafka.tools.StorageTool',
      'format',
      '--standalone',
      `--cluster-id=${clusterId}`,
      '-c',
      propertiesFile,
      '--feature',
      `transaction.version=${transactionVersion}`,
      ...(options.formatArgs ?? []),
    ]);
    format = { version: 1, clusterId, controllerPort, transactionVersion, kafkaVersion: distribution.kafkaVersion };
    await writeJsonAtomically(join(dataDir, 'format.json'), format);
  }

  const logFile = join(dataDir, 'broker.log');
  const out = openSync(logFile, 'a');
  const heapMb = options.heapMb ?? 512;
  const child = spawn(
    'java',
    [
      `-Xms${Math.min(heapMb, 256)}m`,
      `-Xmx${heapMb}m`,
      '-XX:+UseG1GC',
      '-Djava.awt.headless=true',
      `-Dlog4j2.configurationFile=${join(kafkaAssetsDir, 'log4j2.properties')}`,
      `-Dkafka.logs.dir=${dataDir}`,
      `-Dweir.data.dir=${dataDir}`,
      '-cp',
      distribution.classpath,
      'kafka.Kafka',
      propertiesFile,
    ],
    { detached: true, stdio: ['ignore', out, out] },
  );
  closeSync(out);
  let exitCode: number | null | undefined;
  child.once('exit', (code, signal) => {
    exitCode = code ?? (signal === null ? -1 : 128);
  });
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new WeirError('BROKER_START_FAILED', 'java could not be started', { hint: 'check that `java -version` works' });

  log(`starting Kafka ${distribution.kafkaVersion} (pid ${pid}) on ${HOST}:${port}, log ${logFile}`);
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  let info: Awaited<ReturnType<typeof describeCluster>> | undefined;
  while (info === undefined) {
    if (exitCode !== undefined || !isAlive(pid)) {
      throw new WeirError('BROKER_START_FAILED', `the Kafka broker exited during start-up. The end of ${logFile}:\n${tailOf(logFile, 25)}`, {
        hint: 'fix what the log names; `weir kafka start --wipe` formats the data folder anew',
        fault: 'external',
      });
    }
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGKILL');
      throw new WeirError(
        'BROKER_START_FAILED',
        `the Kafka broker did not answer within ${formatDuration(options.startTimeoutMs ?? 120_000)}. The end of ${logFile}:\n${tailOf(logFile, 25)}`,
        {
          hint: 'the machine may be overloaded; try again, or look at the whole log',
          fault: 'external',
          retriable: true,
        },
      );
    }
    info = await describeCluster([{ host: HOST, port }], 2_000).catch(() => undefined);
    if (info === undefined) await sleep(250);
  }

  const state: BrokerState = {
    version: 1,
    pid,
    host: HOST,
    port,
    controllerPort,
    kafkaVersion: distribution.kafkaVersion,
    transactionVersion: info.transactionVersion,
    transactionMaxTimeoutMs,
    dataDir,
    startedAt: new Date().toISOString(),
  };
  await writeJsonAtomically(join(dataDir, 'broker.json'), state);
  return state;
}

/** Stops the broker with SIGTERM and waits for it to exit. Returns the state it had, or undefined if none ran. */
export async function stopLocalBroker(options: { dataDir?: string; timeoutMs?: number; log?: (line: string) => void } = {}): Promise<BrokerState | undefined> {
  const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  const state = readRunningState(dataDir);
  if (state === undefined) {
    await rm(join(dataDir, 'broker.json'), { force: true });
    return undefined;
  }
  options.log?.(`stopping the broker at ${bootstrapOf(state)} (pid ${state.pid})...`);
  process.kill(state.pid, 'SIGTERM');
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (isAlive(state.pid)) {
    if (Date.now() > deadline) {
      options.log?.(`the broker did not stop within ${formatDuration(options.timeoutMs ?? 60_000)} of SIGTERM; sending SIGKILL`);
      process.kill(state.pid, 'SIGKILL');
      while (isAlive(state.pid)) await sleep(50);
      break;
    }
    await sleep(100);
  }
  await rm(join(dataDir, 'broker.json'), { force: true });
  return state;
}

/** What a Kafka broker on 127.0.0.1:`port` reports, if one answers there (whoever started it). */
export async function brokerOnPort(port: number): Promise<{ transactionVersion: number } | undefined> {
  try {
    const info = await describeCluster([{ host: '127.0.0.1', port }], 3_000);
    return { transactionVersion: info.transactionVersion };
  } catch {
    return undefined;
  }
}

/** Whether the broker of this data folder runs, and what its cluster reports. */
export async function localBrokerStatus(options: { dataDir?: string } = {}): Promise<BrokerStatus> {
  const dataDir = resolve(options.dataDir ?? DEFAULT_DATA_DIR);
  const state = readRunningState(dataDir);
  if (state === undefined) return { running: false, dataDir };
  try {
    const info = await describeCluster([{ host: state.host, port: state.port }], 3_000);
    return { running: true, dataDir, state, transactionVersion: info.transactionVersion };
  } catch (error) {
    return { running: true, dataDir, state, problem: error instanceof Error ? error.message : String(error) };
  }
}

/** The broker `weir kafka start` runs from `dataDir` (default `.weir/kafka` of the working folder), if it runs. */
export function runningLocalBroker(dataDir: string = DEFAULT_DATA_DIR): BrokerState | undefined {
  return readRunningState(resolve(dataDir));
}

/** The recorded state if its process is alive and is this folder's broker; a stale record counts as none. */
function readRunningState(dataDir: string): BrokerState | undefined {
  const file = join(dataDir, 'broker.json');
  if (!existsSync(file)) return undefined;
  let state: BrokerState;
  try {
    state = JSON.parse(readFileSync(file, 'utf8')) as BrokerState;
  } catch {
    return undefined;
  }
  if (state.version !== 1 || !isAlive(state.pid)) return undefined;
  // A pid can be recycled: make sure it is still this folder's Kafka.
  try {
    const commandLine = readFileSync(`/proc/${state.pid}/cmdline`, 'utf8');
    if (!commandLine.includes('kafka.Kafka') || !commandLine.includes(dataDir)) return undefined;
  } catch {
    // No /proc (not Linux): trust the pid.
  }
  return state;
}

function readFormatRecord(dataDir: string): FormatRecord | undefined {
  const file = join(dataDir, 'format.json');
  if (!existsSync(file)) return undefined;
  const record = JSON.parse(readFileSync(file, 'utf8')) as FormatRecord;
  if (record.version !== 1) {
    throw new WeirError('BROKER_FORMAT_MISMATCH', `${file} has format version ${record.version}, which this Weir does not know`, {
      hint: 'pass --wipe to format the data folder anew, or use the Weir version that made it',
    });
  }
  return record;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie (exited, not yet reaped by its parent) still answers signal 0.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/** A Kafka cluster id: 16 random bytes, URL-safe base64 without padding. */
function kafkaUuid(): string {
  return randomBytes(16).toString('base64url');
}

async function runJava(classpath: string, args: string[]): Promise<void> {
  const child = spawn('java', ['-Xmx256m', `-Dlog4j2.configurationFile=${join(kafkaAssetsDir, 'log4j2.properties')}`, '-cp', classpath, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((done) => child.once('close', done));
  if (code !== 0) {
    throw new WeirError('BROKER_FORMAT_FAILED', `formatting the Kafka storage failed:\n${output.trim().split('\n').slice(-15).join('\n')}`, {
      hint: 'pass --wipe to start from an empty data folder',
      fault: 'external',
    });
  }
}

function tailOf(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function writeJsonAtomically(file: string, value: unknown): Promise<void> {
  const temporary = `${file}.tmp`;
  await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`);
  await rename(temporary, file);
}

/** A free port for the controller other than the broker's own `port` (not bound yet, so the kernel could hand it out). */
async function freePortBeside(port: number): Promise<number> {
  const candidates = await freePorts(2);
  return (candidates[0] === port ? candidates[1] : candidates[0]) as number;
}
