/**
 * The entry point of a cluster member's task threads (task-threads.ts): loads the job module,
 * opens the thread's own Kafka connections and transaction driver, and runs the tasks the member's
 * main thread starts here, each a {@link ClusterTask} on producers the main thread opened (their
 * earlier owners fenced). The group's generation its commits carry and the control topic's
 * savepoints come by message; its tasks' failures, metrics, checkpoints and logs go back.
 */
import { writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { ClusterConnections } from '../connectors/kafka/cluster-connections.ts';
import { resolveKafkaConnection } from '../connectors/kafka/kafka-default-connection.ts';
import { hasKafkaError } from '../connectors/kafka/kafka-error-ids.ts';
import { NumericMap } from '../connectors/kafka/kafka-protocol.ts';
import type { OffsetsOwner } from '../connectors/kafka/offsets-owner.ts';
import { TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import { setConnectorDefaults } from '../core/config/connector-defaults.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { loadJobModule } from '../runtime/deployment/job-module.ts';
import { ClusterTask } from './cluster-task.ts';
import type { MemberRuntime } from './member-runtime.ts';
import { RelayedControl } from './relayed-control.ts';
import type { Stage } from './stage-plan.ts';
import { decodeTaskCheckpoint, encodeTaskCheckpoint, type TaskCheckpoint } from './task-checkpoint.ts';
import { crashTaskThread, taskThreadFault } from './task-thread-fault.ts';
import type { CrossingError, FromTaskThread, RunReport, TaskThreadInit, ToTaskThread } from './task-thread-messages.ts';

/** How often the thread reports its tasks' metrics and checkpoints to the main thread. */
const REPORT_EVERY_MS = 1000;

const init = workerData as TaskThreadInit;
// A thread's stderr goes straight to the process's, as the main thread's does (a pipe or a file:
// synchronous), not through Node's relay to the main thread: a line written right before a
// WEIR_FAULT kills or pauses the whole process is not lost.
const relayedWrite = process.stderr.write.bind(process.stderr);
process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
  try {
    if (typeof chunk === 'string') writeSync(2, chunk);
    else writeSync(2, chunk);
    const done = rest.at(-1) as unknown;
    if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
    return true;
  } catch {
    return relayedWrite(chunk, ...rest); // a full pipe (EAGAIN): through the relay after all
  }
}) as typeof process.stderr.write;
// Before the job module loads: its connectors read these when they connect.
setConnectorDefaults(init.connectorDefaults);
const port = parentPort;
if (port === null) throw new Error('cluster-task-worker runs only in a worker thread');
const post = (message: FromTaskThread) => port.postMessage(message);

let owner: OffsetsOwner = init.owner;
const control = new RelayedControl(init.control);
const runs = new Map<number, { task: ClusterTask; committedWith: number | undefined; started: boolean; stoppedAs: OffsetsOwner | undefined }>();
/** Runs asked to start whose task does not exist yet (the job module still loads): a stop meanwhile cancels them. */
const pending = new Set<number>();
let closing = false;

const runtime: Promise<MemberRuntime> = (async () => {
  const job = await loadJobModule(init.jobModuleUrl);
  const kafka = resolveKafkaConnection({}, 'cluster mode (--cluster)');
  const connections = new ClusterConnections(kafka.bootstrap, {
    clientId: 'weir-cluster',
    ...kafka.connection,
    owner: `cluster "${init.clusterId}" task thread ${init.thread}`,
  });
  return {
    clusterId: init.clusterId,
    job,
    config: init.config,
    graph: init.graph,
    plan: init.plan,
    taskCounts: init.taskCounts,
    connections,
    driver: new TransactionDriver(connections, { transactionTimeoutMs: init.transactionTimeoutMs }),
    bootstrap: kafka.bootstrap,
    connection: kafka.connection,
    owner: () => owner,
    log: (line: string) => post({ type: 'log', line }),
    savepoints: control,
    fromSavepoint: init.fromSavepoint,
  };
})();
runtime.catch(() => {}); // each start reports it

function crossing(error: unknown): CrossingError {
  if (error instanceof WeirError) return { weir: error.serialize() };
  return error instanceof Error ? { message: error.message, stack: error.stack } : { message: String(error), stack: undefined };
}

async function start(message: Extract<ToTaskThread, { type: 'start' }>): Promise<void> {
  pending.add(message.run);
  let member: MemberRuntime;
  try {
    member = await runtime;
  } catch (error) {
    if (pending.delete(message.run)) post({ type: 'startFailed', run: message.run, error: crossing(error) });
    return;
  }
  if (!pending.delete(message.run)) return; // stopped before it started
  const stage = member.plan.stages.find((entry) => entry.uid === message.stage) as Stage;
  const entry = {
    task: undefined as unknown as ClusterTask,
    committedWith: undefined as number | undefined,
    started: false,
    stoppedAs: undefined as OffsetsOwner | undefined,
  };
  // The generation each commit carries is noted: a commit the group refuses was refused for that
  // generation. A run told to stop keeps the generation it had then: the member stops the tasks a
  // generation revokes before that generation reaches its threads, so a commit of a revoked task
  // still under way never carries the generation that revoked it (it is refused).
  const taskRuntime: MemberRuntime = {
    ...member,
    owner: () => {
      const as = entry.stoppedAs ?? owner;
      entry.committedWith = as.generationId;
      return as;
    },
  };
  let failed = false;
  entry.task = new ClusterTask(taskRuntime, stage, message.task, message.restored, (error) => {
    if (failed || !runs.has(message.run)) return;
    failed = true;
    const byGroup = hasKafkaError(error, 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID');
    post({ type: 'failed', run: message.run, error: crossing(error), byGroup, committedWith: entry.committedWith });
    // Stopped at once, as its member stops a failed task: its open transaction (a refused commit's
    // checkpoint record in it) is aborted without waiting for the main thread's word.
    void stopRun(message.run);
  });
  runs.set(message.run, entry);
  const open = { ...message.open, partitions: new Set<string>(), sequences: new NumericMap(), records: 0 };
  try {
    await entry.task.start(open);
  } catch (error) {
    post({ type: 'startFailed', run: message.run, error: crossing(error) });
    return;
  }
  entry.started = true;
  post({ type: 'started', run: message.run, restoredBytes: entry.task.restoredBytes, restoreMs: entry.task.restoreMs });
}

/** Runs being stopped, each to the checkpoint it last committed (else restored): the main thread's stop of a run that failed (and stopped itself) waits for it. */
const stopping = new Map<number, Promise<TaskCheckpoint | undefined>>();

function stopRun(run: number): Promise<TaskCheckpoint | undefined> {
  let done = stopping.get(run);
  if (done === undefined) {
    pending.delete(run);
    const entry = runs.get(run);
    runs.delete(run);
    if (entry !== undefined) entry.stoppedAs ??= owner;
    done =
      entry === undefined
        ? Promise.resolve(undefined)
        : entry.task.stop().then(
            // Once stopped no commit of the run follows: its latest is final. As the checkpoint topic gives it (encoded and decoded).
            () => (entry.task.latest === undefined ? undefined : decodeTaskCheckpoint(encodeTaskCheckpoint(entry.task.latest), `${entry.task.name}'s latest`)),
            () => undefined,
          );
    stopping.set(run, done);
  }
  return done;
}

async function stop(run: number): Promise<void> {
  const latest = await stopRun(run);
  stopping.delete(run);
  post({ type: 'stopped', run, latest });
}

async function close(): Promise<void> {
  closing = true;
  clearInterval(reporting);
  await Promise.all([...new Set([...pending, ...runs.keys(), ...stopping.keys()])].map((run) => stop(run)));
  const member = await runtime.catch(() => undefined);
  await member?.connections.close().catch(() => {});
  post({ type: 'closed' });
}

const crashAt = taskThreadFault(init.thread, init.incarnation);

function report(): void {
  const now = Date.now();
  const reports: RunReport[] = [];
  for (const [run, entry] of runs) {
    if (!entry.started) continue;
    reports.push({ run, snapshot: entry.task.metrics(now), completed: entry.task.completed, latestCheckpointId: entry.task.latest?.checkpointId });
    const committed = entry.task.completed > 0 ? entry.task.latest?.checkpointId : undefined;
    if (crashAt !== undefined && committed !== undefined && committed >= crashAt) crashTaskThread(init.thread, committed, entry.task.name);
  }
  if (reports.length > 0) post({ type: 'reports', runs: reports });
}
const reporting = setInterval(report, REPORT_EVERY_MS);

port.on('message', (message: ToTaskThread) => {
  switch (message.type) {
    case 'owner':
      owner = message.owner;
      return;
    case 'control':
      control.update(message.control);
      return;
    case 'start':
      if (!closing) void start(message);
      return;
    case 'stop':
      void stop(message.run);
      return;
    case 'close':
      void close();
      return;
  }
});
