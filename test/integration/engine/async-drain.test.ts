/**
 * `weir stop --savepoint --drain` while async requests are in flight: the drained savepoint comes
 * after every record's results. A slow HTTP service (every answer 300-600 ms, then fast for the resumed run) keeps the async
 * operators' queues full; the job (Kafka -> orderedWait chained with the source, and unorderedWait
 * behind a rebalance in a task of its own -> exactly-once Kafka sinks) is stopped with a drain while
 * it is far behind its input. Read back read_committed, the first run's output holds, exactly once,
 * every record the service was asked about in that run: none is left in the savepoint's async state
 * behind offsets already past it. Resumed from the savepoint, the job reads the rest and is drained
 * again: together every input record once, and nothing asked about twice across the two runs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { auditTopic } from '../../../src/audit/audit-topic.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import type { Enriched } from '../../fixtures/jobs/async-enrich-job.ts';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { ABORTED_SEQ_BASE, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { startWeirRun, until, type WeirRun } from '../../harness/weir-run.ts';

const jobModule = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'async-enrich-job.ts');
const scoreOf = (seq: number) => (seq * 3) % 1000;

/** A slow score service that records which seqs it was asked about, per run. */
async function startSlowService(): Promise<{ server: Server; url: string; asked: Set<number>[]; latency: { least: number; spread: number } }> {
  const asked: Set<number>[] = [new Set()];
  const latency = { least: 300, spread: 300 };
  const server = createServer((request, response) => {
    const seq = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('seq'));
    (asked.at(-1) as Set<number>).add(seq);
    setTimeout(
      () => {
        if (!response.destroyed) response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ score: scoreOf(seq) }));
      },
      latency.least + Math.floor(Math.random() * latency.spread),
    );
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked, latency };
}

async function seqsOf(brokers: ReturnType<typeof testBrokers>, topic: string): Promise<number[]> {
  return (await readTopic({ bootstrap: brokers, topic })).map((record) => (JSON.parse(String(record.value)) as Enriched).seq);
}

describe('a drained stop with async requests in flight', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  test('every record asked about before the drain is in the output once; the resumed run reads the rest', async () => {
    const count = 20_000;
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'drain-in', 4);
    const ordered = await createTestTopic(brokers, 'drain-ordered', 4);
    const unordered = await createTestTopic(brokers, 'drain-unordered', 4);
    const folder = await mkdtemp(join(tmpdir(), 'weir-async-drain-'));
    const service = await startSlowService();
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
      AE_REBALANCE: '1',
      AE_TIMEOUT: '20s',
      AE_CAPACITY: '20',
      AE_UNBOUNDED: '1',
    };
    const storage = join(folder, 'checkpoints');
    // Small batches and credits: the records queued in channels behind the slow lookups stay few,
    // so the barriers (and the drained savepoint) do not wait long behind them.
    const config = join(folder, 'config.json');
    await writeFile(config, JSON.stringify({ batchSize: 16, channelCredits: 2 }));
    const args = [jobModule, '--config', config, '--parallelism', '2', '--workers', '2', '--checkpoint-interval', '500ms', '--checkpoint-storage', storage];
    const stopDrained = async (run: WeirRun, url: string) => {
      const stop = await weir(['stop', '--savepoint', '--drain', '--url', url]);
      assert.equal(stop.code, 0, `${stop.stderr}\n${run.stderr()}`);
      assert.match(stop.stdout, /^stopped with savepoint \d+: .+$/m);
      assert.equal(await run.exited, 0, run.stderr());
    };

    const first = startWeirRun([...args, '--ui-port', '0'], env);
    try {
      const url = await first.url();
      await first.waitFor(/running kafka source/, 60_000);
      // Far behind its input: the queues are full, requests in flight on every subtask.
      await until('requests in flight', async () => ((service.asked[0] as Set<number>).size > 200 ? true : undefined));
      await stopDrained(first, url);
    } finally {
      first.child.kill('SIGKILL');
    }
    const askedFirst = service.asked[0] as Set<number>;
    for (const topic of [ordered.topic, unordered.topic]) {
      const seqs = await seqsOf(brokers, topic);
      const output = new Set(seqs);
      assert.equal(output.size, seqs.length, `${topic}: no record twice after the drain`);
      const lost = [...askedFirst].filter((seq) => !output.has(seq));
      assert.equal(
        lost.length,
        0,
        `${topic}: ${lost.length} of ${askedFirst.size} records asked about before the drain are not in its output (e.g. ${lost.slice(0, 5).join(', ')})`,
      );
      assert.ok(seqs.length < count, `${topic}: the drain came before the end of the input (${seqs.length} of ${count})`);
    }

    // Resumed from the savepoint with a fast service: the rest of the input, nothing asked about again.
    service.asked.push(new Set());
    service.latency.least = 1;
    service.latency.spread = 5;
    const second = startWeirRun([...args, '--ui-port', '0'], { ...env, AE_CAPACITY: '100' });
    try {
      const url = await second.url();
      await until(
        'the whole input in both outputs',
        async () => ((await seqsOf(brokers, ordered.topic)).length >= count && (await seqsOf(brokers, unordered.topic)).length >= count ? true : undefined),
        120_000,
      );
      await stopDrained(second, url);
    } finally {
      second.child.kill('SIGKILL');
    }
    const again = [...(service.asked[1] as Set<number>)].filter((seq) => askedFirst.has(seq));
    assert.equal(again.length, 0, `${again.length} records were asked about in both runs (in the savepoint's async state)`);
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
    }
  });
});
