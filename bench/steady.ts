/**
 * Quick A/B runs of the side-by-side benchmark's job: bounded runs of Weir (or the raw pipe) over
 * one pre-filled input, each with the steady rate as `bench:compare` computes it (the output's
 * high watermarks sampled every 100 ms, the rate between 10% and 90% of the records), its wall
 * time, and its CPU by thread (user and system time from /proc, V8's helper threads apart), plus
 * the broker's CPU when it runs on this machine. No kill, no live phase: seconds a run, so a change
 * can be run against a worktree of the code before it, alternated, in one session.
 *
 *   npm run bench:steady [-- --cases weir:2:100,weir:2:1000,raw:2:0 --rounds 3 --brokers host:port --input <topic>]
 *
 * The input is written once (or `--input` names one written before, e.g. by a run in another
 * worktree: each run prints it) and kept, so every run reads the same records.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { formatBootstrap } from '../src/connectors/kafka/kafka-connection-options.ts';
import { benchBroker } from './compare/bench-broker.ts';
import { cpuOf, threadCpuOf } from './compare/cpu-of.ts';
import { auditOutput, fillInput, OutputWatcher, PARTITIONS, topicSize, WrittenSampler, waitForTopics } from './compare/kafka-io.ts';
import { type StartSettings, SYSTEM_LABELS, type SystemName, startSystem } from './compare/systems.ts';

const USAGE = `npm run bench:steady [-- options]
  --cases <list>     system:parallelism:interval-ms, comma-separated (default weir:2:100,weir:2:1000,raw:2:0;
                     systems: weir, raw; the raw pipe has no interval)
  --rounds <n>       how many times the cases run, in turn (default 3)
  --records <n>      the input's records, written once (default 1000000)
  --input <topic>    a topic this command wrote before (its records are read, none written)
  --watch            read the output read_committed while a run goes, as bench:compare does
  --audit            audit every run's output (every record once, exact counts)
  --brokers <list>   use this cluster instead of starting a broker`;

const { values: options } = parseArgs({
  options: {
    cases: { type: 'string', default: 'weir:2:100,weir:2:1000,raw:2:0' },
    rounds: { type: 'string', default: '3' },
    records: { type: 'string', default: '1000000' },
    input: { type: 'string' },
    watch: { type: 'boolean', default: false },
    audit: { type: 'boolean', default: false },
    brokers: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}

interface Case {
  system: SystemName;
  parallelism: number;
  intervalMs: number;
  text: string;
}

const cases: Case[] = options.cases.split(',').map((text) => {
  const [system, parallelism, interval] = text.split(':');
  if ((system !== 'weir' && system !== 'raw') || !(Number(parallelism) >= 1) || !(Number(interval ?? 0) >= 0)) {
    throw new Error(`--cases: "${text}" is not system:parallelism:interval-ms with system weir or raw (${USAGE})`);
  }
  return { system, parallelism: Number(parallelism), intervalMs: Number(interval ?? 0), text };
});
const rounds = Number(options.rounds);
const folder = await mkdtemp(join(tmpdir(), 'weir-steady-'));
const log = (line: string) => process.stderr.write(`${line}\n`);
const { brokers, release } = await benchBroker(options.brokers, folder, log);
const bootstrap = formatBootstrap(brokers);
const admin = new Admin({ clientId: 'weir-steady', bootstrapBrokers: [bootstrap] });
const tag = Date.now().toString(36);

let input = options.input;
if (input === undefined) {
  input = `weir-steady-${tag}-in`;
  await admin.createTopics({ topics: [input], partitions: PARTITIONS, replicas: 1 });
  await waitForTopics(brokers, [input]);
  await fillInput(brokers, input, 0, Number(options.records));
}
const records = await topicSize(brokers, input);
log(`input ${input}: ${records.toLocaleString('en')} records${options.brokers === undefined ? '' : ` (--input ${input} reads it again)`}`);

/** The broker's CPU seconds, when it is a process of this machine listening on the first broker's port. */
function brokerCpu(): number | undefined {
  const port = brokers[0]?.port;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!command.includes('kafka.Kafka')) continue;
      const config = command
        .split('\0')
        .filter((part) => part.endsWith('.properties') && !part.startsWith('-'))
        .at(-1);
      if (config !== undefined && port !== undefined && !new RegExp(`:${port}(?!\\d)`).test(readFileSync(config, 'utf8'))) continue;
      return cpuOf(Number(pid));
    } catch {
      // not readable: not ours
    }
  }
  return undefined;
}

const fmt = (seconds: number) => seconds.toFixed(2);
let runs = 0;
try {
  for (let round = 0; round < rounds; round++) {
    for (const entry of cases) {
      const output = `weir-steady-${tag}-${runs++}-out`;
      await admin.createTopics({ topics: [output], partitions: PARTITIONS, replicas: 1 });
      await waitForTopics(brokers, [output]);
      const settings: StartSettings = {
        bootstrap,
        input,
        output,
        parallelism: entry.parallelism,
        intervalMs: entry.intervalMs,
        folder: join(folder, output),
        runName: output,
        jvmOptions: [],
        nodeOptions: [],
        bounded: true,
      };
      const sampler = new WrittenSampler(brokers, output);
      const watcher = options.watch ? new OutputWatcher(brokers, output) : undefined;
      const brokerBefore = brokerCpu();
      const started = performance.now();
      const child = startSystem(entry.system, settings, join(folder, `${output}.log`));
      const times = new Map<string, { name: string; user: number; system: number }>();
      const poll = setInterval(() => {
        for (const [tid, reading] of threadCpuOf(child.pid as number)) times.set(tid, reading); // an ended thread keeps its last reading
      }, 100);
      const code = await new Promise<number | null>((done) => child.once('exit', done));
      clearInterval(poll);
      const wall = (performance.now() - started) / 1000;
      const brokerAfter = brokerCpu();
      await sleep(200); // the last samples
      await sampler.stop();
      await watcher?.stop();
      if (code !== 0) throw new Error(`${SYSTEM_LABELS[entry.system]} exited with code ${code}; see ${join(folder, `${output}.log`)}`);
      if (options.audit) {
        const audit = await auditOutput(brokers, output, records);
        if (!audit.ok) throw new Error(`${entry.text}: the output failed the audit: ${JSON.stringify(audit)}`);
      }
      const steady = sampler.rateBetween(records * 0.1, records * 0.9);
      const byName = new Map<string, { user: number; system: number }>();
      for (const { name, user, system } of times.values()) {
        const sum = byName.get(name) ?? { user: 0, system: 0 };
        sum.user += user;
        sum.system += system;
        byName.set(name, sum);
      }
      const threads = [...byName]
        .filter(([, sum]) => sum.user + sum.system >= 0.01)
        .map(([name, sum]) => `${name} ${fmt(sum.user)}+${fmt(sum.system)}`)
        .join(', ');
      const total = [...byName.values()].reduce((sum, entry) => sum + entry.user + entry.system, 0);
      const broker = brokerBefore === undefined || brokerAfter === undefined ? '' : `, broker ${fmt(brokerAfter - brokerBefore)} s`;
      console.log(
        `${entry.text} round ${round + 1}: steady ${steady === undefined ? '?' : `${Math.round(steady / 1000)}k`} records/s, wall ${wall.toFixed(1)} s, ` +
          `CPU ${fmt(total)} s (user+system: ${threads})${broker}`,
      );
      await admin.deleteTopics({ topics: [output] }).catch(() => {});
    }
  }
} finally {
  await admin.close();
  await release();
}
