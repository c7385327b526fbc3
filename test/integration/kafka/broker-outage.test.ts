/**
 * A broker outage longer than the old restart budget (3 restarts, 1 s apart) while input flows:
 * Kafka in, keyBy, count, Kafka out, exactly-once, unbounded, with the default restart strategy.
 * The test's own broker is stopped (SIGTERM, a graceful restart) or SIGKILLed for 20 s and started
 * again on the same port and data folder. The job rides it out (its tasks retry; the restart
 * strategy keeps it alive), says within seconds that the broker is unreachable and what it waits
 * for, and a read_committed reader of the output finds every input exactly once.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { committableOf, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { isAlive, localBrokerStatus, startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePorts } from '../../../src/local-kafka/ports.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, KEYS } from '../../harness/kafka-count-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
/** Past every retry budget the tests set (3 s) and the old restart budget; the first test's 1 minute retryTimeout rides it out. */
const OUTAGE_MS = 20_000;
const BATCH = 250;

/**
 * Writes {seq, key} records in committed transactions of BATCH, one every 100 ms, while not
 * paused; `written` counts the committed ones. It pauses by itself once `pauseAt` are written
 * (until {@link resume}), so input is left to flow after the outage however fast it wrote before.
 */
class InputWriter {
  written = 0;
  paused = false;
  #pauseAt: number;
  #stopped = false;
  #idle = true;
  readonly #done: Promise<void>;

  constructor(brokers: readonly BrokerAddress[], topic: string, partitions: number, total: number, pauseAt: number) {
    this.#pauseAt = pauseAt;
    this.#done = this.#run(brokers, topic, partitions, total);
  }

  async #run(brokers: readonly BrokerAddress[], topic: string, partitions: number, total: number): Promise<void> {
    while (this.written < total && !this.#stopped) {
      if (this.written >= this.#pauseAt && this.#pauseAt > 0) {
        this.paused = true;
        this.#pauseAt = 0;
      }
      if (this.paused) {
        this.#idle = true;
        await sleep(50);
        continue;
      }
      this.#idle = false;
      const connections = new ClusterConnections(brokers);
      try {
        const driver = new TransactionDriver(connections, { transactionTimeoutMs: 60_000 });
        const transaction = await driver.initTransaction(`${topic}-writer`);
        const first = this.written;
        await driver.send(
          transaction,
          Array.from({ length: Math.min(BATCH, total - first) }, (_, i) => {
            const seq = first + i;
            return {
              topic,
              partition: seq % partitions,
              key: Buffer.from(`key-${seq % KEYS}`),
              value: Buffer.from(JSON.stringify({ seq, key: `key-${seq % KEYS}` })),
            };
          }),
        );
        await driver.commit(committableOf(transaction));
        this.written += transaction.records;
      } finally {
        await connections.close();
      }
      await sleep(100);
    }
    this.#idle = true;
  }

  /** Pauses after the transaction under way. */
  async pause(): Promise<void> {
    this.paused = true;
    await waitFor('the input writer to pause', () => this.#idle, 60_000);
  }

  async finished(): Promise<void> {
    await this.#done;
  }

  stop(): void {
    this.#stopped = true;
  }
}

describe('a broker outage longer than the old restart budget, while input flows', () => {
  let folder: string;
  let port: number;
  let controllerPort: number;
  let brokers: BrokerAddress[];
  const dataDir = () => join(folder, 'kafka');
  const startBroker = (wipe: boolean) => startLocalBroker({ dataDir: dataDir(), port, controllerPort, wipe, heapMb: 384 });

  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-outage-'));
    [port, controllerPort] = (await freePorts(2)) as [number, number];
    brokers = [{ host: '127.0.0.1', port }];
    await startBroker(true);
  });
  after(async () => {
    await stopLocalBroker({ dataDir: dataDir() });
    await rm(folder, { recursive: true, force: true });
  });

  /** The job's JSON log lines (WEIR_LOG_FORMAT=json): each has a level, a time and a message. */
  const logLines = (stderr: string) =>
    stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; time: number; msg: string });

  async function outage(label: string, env: Record<string, string>, stop: () => Promise<void>): Promise<{ restarts: number; stderr: string }> {
    const total = 12_000;
    const { topic: input } = await createTestTopic(brokers, `outage-in-${label}`, 2);
    const { topic: output } = await createTestTopic(brokers, `outage-out-${label}`, 2);
    const writer = new InputWriter(brokers, input, 2, total, total / 2);
    const config = { parallelism: 1, workers: 1, checkpointing: { interval: '300ms', storage: join(folder, `checkpoints-${label}`) } };
    const job = startJobProcess(
      jobModule,
      config,
      { KAFKA_BROKERS: `127.0.0.1:${port}`, KC_INPUT: input, KC_OUTPUT: output, KC_UNBOUNDED: '1', KC_WORK_US: '1000', WEIR_LOG_FORMAT: 'json', ...env },
      240_000,
    );
    try {
      await waitFor(
        'a few checkpoints and some input',
        () => (job.stdout.match(/^checkpoint \d+$/gm)?.length ?? 0) >= 3 && writer.written >= total / 2,
        90_000,
      );
      await writer.pause();
      const stoppedAt = Date.now();
      await stop();
      // Within seconds the job warns that the broker is gone, and keeps saying what it waits for.
      const warnings = () => logLines(job.stderr).filter((line) => line.level === 40 && line.time >= stoppedAt && /unreachable/.test(line.msg));
      await waitFor('a warning that the broker is unreachable', () => warnings().length > 0, 15_000);
      const warnedAfterMs = (warnings()[0] as { time: number }).time - stoppedAt;
      await sleep(Math.max(0, OUTAGE_MS - (Date.now() - stoppedAt)));
      assert.equal(job.child.exitCode, null, `the job ended during the outage:\n${job.stderr}`);
      assert.ok(warnings().length >= 2, `one warning, not repeated while the broker stayed away:\n${job.stderr}`);
      assert.match(
        (warnings()[0] as { msg: string }).msg,
        /^Kafka broker 127\.0\.0\.1:\d+ unreachable \(.+\): the kafka (sink|source).* is retrying, giving up in/,
      );
      await startBroker(false);
      writer.paused = false;
      await writer.finished();
      // The whole input in the output; a job that ends (its restarts used up) fails the test at once.
      const ended = job.exit.then(() => {
        throw new Error(`the job ended:\n${job.stderr}`);
      });
      ended.catch(() => {});
      await waitFor('the whole input in the output', async () => (await Promise.race([auditCounts(brokers, output, total), ended])).outputs >= total, 120_000);
      assert.equal(job.child.exitCode, null, `the job ended:\n${job.stderr}`);
      const audit = await auditCounts(brokers, output, total);
      assert.deepEqual(audit, exactCountAudit(total));
      assert.ok(warnedAfterMs < 15_000, `warned ${warnedAfterMs} ms after the broker stopped`);
      return { restarts: job.stdout.match(/^restarting$/gm)?.length ?? 0, stderr: job.stderr };
    } finally {
      writer.stop();
      job.child.kill('SIGKILL');
      await job.exit;
      // A failure mid-outage leaves the broker down: the next test needs it.
      if (!(await localBrokerStatus({ dataDir: dataDir() })).running) await startBroker(false);
    }
  }

  test('stopped gracefully for 20 s: the tasks retry within their 1 minute retryTimeout, exact output', async () => {
    const { restarts, stderr } = await outage('sigterm', {}, async () => {
      await stopLocalBroker({ dataDir: dataDir() });
    });
    // The tasks waited for the broker: no restart, and the log says when it was back.
    assert.equal(restarts, 0, stderr);
    assert.ok(
      logLines(stderr).some((line) => line.level === 30 && /^Kafka reachable again after \d+s: the kafka (sink|source)/.test(line.msg)),
      stderr,
    );
  });

  test('SIGKILLed for 20 s with a 3 s retryTimeout: the job restarts with growing waits until the broker is back, exact output', async () => {
    const { restarts } = await outage('sigkill', { KC_RETRY_TIMEOUT: '3s' }, async () => {
      const status = await localBrokerStatus({ dataDir: dataDir() });
      assert.ok(status.running && status.state !== undefined);
      const pid = status.state.pid;
      process.kill(pid, 'SIGKILL');
      await waitFor('the broker to die', () => !isAlive(pid), 30_000);
      await stopLocalBroker({ dataDir: dataDir() }); // forgets the dead broker's state file
    });
    // More failures than the old default's 3 restarts allowed; the exponential-delay default rides them out.
    assert.ok(restarts >= 3, `${restarts} restarts`);
  });
});
