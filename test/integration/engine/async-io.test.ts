/**
 * Async I/O exactly-once: Kafka in, each record enriched from a real HTTP service on loopback
 * (random latency, some answers 503 and retried, some never in time and so timed out), Kafka out,
 * through orderedWait and unorderedWait side by side. The job process is SIGKILLed several times
 * (once between "checkpoint complete" and the commit) and restarted; the records in flight at each
 * checkpoint are asked about again after each restore. Read back read_committed, each output has
 * every committed input exactly once, none of the aborted input, a score that is the service's or
 * the timeout's, and the ordered one has each key's records in their input order.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { auditTopic } from '../../../src/audit/audit-topic.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import type { Enriched } from '../../fixtures/jobs/async-enrich-job.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { ABORTED_SEQ_BASE, writeChaosInput } from '../../harness/kafka-count-audit.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'async-enrich-job.ts');
const scoreOf = (seq: number) => (seq * 7) % 1000;

/** The score service: 0-20 ms per answer, 3% of answers 503, 0.2% held for 1 s (past the job's 300 ms timeout). */
async function startScoreService(): Promise<{ server: Server; url: string; counts: { requests: number; unavailable: number; held: number } }> {
  const counts = { requests: 0, unavailable: 0, held: 0 };
  const server = createServer((request, response) => {
    counts.requests++;
    const seq = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('seq'));
    const roll = Math.random();
    if (roll < 0.03) {
      counts.unavailable++;
      response.writeHead(503).end();
      return;
    }
    const held = roll < 0.032;
    if (held) counts.held++;
    const delay = held ? 1000 : Math.floor(Math.random() * 20);
    setTimeout(() => {
      if (!response.destroyed) response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ score: scoreOf(seq) }));
    }, delay);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, counts };
}

describe('async I/O: Kafka -> orderedWait / unorderedWait on an HTTP service -> Kafka under SIGKILL', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  test('exactly-once with records in flight at every checkpoint: up to 5 kills (at least 3), every record once, ordered where ordered', async (t) => {
    const count = 30_000;
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'async-in', 4);
    const ordered = await createTestTopic(brokers, 'async-ordered', 4);
    const unordered = await createTestTopic(brokers, 'async-unordered', 4);
    const folder = await mkdtemp(join(tmpdir(), 'weir-async-'));
    const service = await startScoreService();
    cleanups.push(input.remove, ordered.remove, unordered.remove, () => rm(folder, { recursive: true, force: true }));
    cleanups.push(async () => {
      service.server.closeAllConnections();
      await new Promise((resolve) => service.server.close(resolve));
    });
    await writeChaosInput(brokers, input.topic, 4, count);

    const env = {
      KAFKA_BROKERS: formatBootstrap(brokers),
      AE_INPUT: input.topic,
      AE_ORDERED_OUTPUT: ordered.topic,
      AE_UNORDERED_OUTPUT: unordered.topic,
      AE_SERVICE: service.url,
    };
    const config = {
      parallelism: 2,
      workers: 2,
      checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };
    const faulted = startJobProcess(jobModule, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
    assert.equal((await faulted.exit).signal, 'SIGKILL', faulted.stderr);
    let killed = 1;
    while (killed < 5) {
      const run = startJobProcess(jobModule, config, env);
      await waitFor('the run', () => /checkpoint \d+/.test(run.stdout) || run.child.exitCode !== null, 60_000);
      await sleep(200 + Math.floor(Math.random() * 800));
      const alive = run.child.exitCode === null;
      run.child.kill('SIGKILL');
      const exit = await run.exit;
      if (!alive) {
        assert.equal(exit.code, 0, run.stderr);
        break; // the input ran out first on a loaded machine: the audit holds all the same
      }
      killed++;
    }
    assert.ok(killed >= 3, `killed ${killed} times`);
    const last = startJobProcess(jobModule, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "async-enrich" from checkpoint \d+/);

    for (const topic of [ordered.topic, unordered.topic]) {
      const audit = await auditTopic({
        bootstrap: brokers,
        topic,
        timeoutMs: 120_000,
        parse: (record) => JSON.parse(String(record.value)) as Enriched,
        idOf: (output) => output.seq,
        expected: { kind: 'sequence', count },
        fromAborted: (seq) => seq >= ABORTED_SEQ_BASE,
      });
      assert.equal(audit.duplicates.copies, 0, `${topic}: no record twice`);
      assert.equal(audit.missing.ids, 0, `${topic}: no record lost`);
      assert.equal(audit.fromAborted.records, 0, `${topic}: nothing of the aborted input`);
      assert.equal(audit.records, count);
    }
    const orderedRecords = (await readTopic({ bootstrap: brokers, topic: ordered.topic })).map((record) => JSON.parse(String(record.value)) as Enriched);
    const lastSeqOf = new Map<string, number>();
    let outOfOrder = 0;
    let timedOut = 0;
    for (const record of orderedRecords) {
      if ((lastSeqOf.get(record.key) ?? -1) > record.seq) outOfOrder++;
      lastSeqOf.set(record.key, record.seq);
      if (record.score === -1) timedOut++;
      else assert.equal(record.score, scoreOf(record.seq), `the service's score of ${record.seq}`);
    }
    assert.equal(outOfOrder, 0, 'orderedWait kept every key in its input order');
    t.diagnostic(`${killed} kills; the service: ${JSON.stringify(service.counts)}; ${timedOut} ordered records timed out`);
    assert.ok(service.counts.unavailable > 0 && service.counts.held > 0, `the service failed and stalled some answers: ${JSON.stringify(service.counts)}`);
    assert.ok(timedOut > 0 && timedOut < count / 20, `some records timed out (${timedOut}), most did not`);
    assert.ok(service.counts.requests > 2 * count, `retries and re-issued records: ${service.counts.requests} requests for ${2 * count} lookups`);
  });
});
