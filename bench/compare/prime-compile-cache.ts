import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Admin } from '@platformatic/kafka';
import type { BrokerAddress } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { fillInput, PARTITIONS, waitForTopics } from './kafka-io.ts';
import { type StartSettings, startSystem, stopProcess } from './systems.ts';

/** Records the priming run reads: enough for every operator, sink and checkpoint path to run once. */
const PRIMING_RECORDS = 2_000;
/** A priming run that takes longer than this has hung: the benchmark stops with its log. */
const PRIMING_TIMEOUT_MS = 120_000;

/**
 * Runs a Node system (Weir or the raw pipe) once over a small bounded input, untimed, before its
 * measured runs: Node's compile cache (the stripped TypeScript and V8's code cache, see
 * bin/weir.js) then holds every module each of its threads loads, as it does for any run but the
 * first after a change of the sources. A first run strips and compiles every module in every
 * thread, which costs each isolate memory that a warm run never uses (measured in
 * docs/benchmarks.md); the JVM peers' equivalent, their compilation, is `buildPeer`'s Maven step.
 */
export async function primeCompileCache(
  system: 'weir' | 'raw',
  context: { admin: Admin; brokers: BrokerAddress[]; bootstrap: string; folder: string; runName: string; parallelism: number },
  log: (line: string) => void,
): Promise<void> {
  const started = Date.now();
  const input = `${context.runName}-prime-${system}-in`;
  const output = `${context.runName}-prime-${system}-out`;
  await context.admin.createTopics({ topics: [input, output], partitions: PARTITIONS, replicas: 1 });
  await waitForTopics(context.brokers, [input, output]);
  await fillInput(context.brokers, input, 0, PRIMING_RECORDS);
  const folder = join(context.folder, `prime-${system}`);
  const settings: StartSettings = {
    bootstrap: context.bootstrap,
    input,
    output,
    parallelism: context.parallelism,
    intervalMs: 1000,
    folder,
    runName: `${context.runName}-prime-${system}`,
    jvmOptions: [],
    nodeOptions: [],
    bounded: true,
  };
  await mkdir(folder, { recursive: true });
  const logFile = join(folder, 'system.log');
  const child = startSystem(system, settings, logFile);
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    new Promise<number | null>((done) => child.once('exit', done)),
    new Promise<'timeout'>((done) => {
      timer = setTimeout(() => done('timeout'), PRIMING_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (code === 'timeout') await stopProcess(child, 'SIGKILL', 0);
  await context.admin.deleteTopics({ topics: [input, output] }).catch(() => {});
  if (code !== 0) throw new Error(`priming ${system}'s compile cache ${code === 'timeout' ? 'timed out' : `exited with code ${code}`}; see ${logFile}`);
  log(
    `primed ${system}'s compile cache in ${((Date.now() - started) / 1000).toFixed(1)} s (an untimed bounded run over ${PRIMING_RECORDS.toLocaleString('en')} records)`,
  );
}
