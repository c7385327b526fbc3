/**
 * Error policies against a real broker: an input topic of N records, some not JSON (the
 * deserializer throws) and some poison (the map throws). 'skip' drops exactly those and counts
 * them; a dead-letter topic gets exactly those, with their bytes and headers, while the job is
 * SIGKILLed, so that read_committed output plus dead letters is the input, each record once;
 * 'fail' fails naming topic, partition, offset and bytes (or the operator and the record).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { PlainProducer } from '../../../src/connectors/kafka/plain-producer.ts';
import { readTopic, type TopicRecord } from '../../../src/connectors/kafka/topic-reader.ts';
import { type JobClient, startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { startRestServer } from '../../../src/web/rest-server.ts';
import { launchBrowser } from '../../harness/browser.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

const brokers = testBrokers();
const job = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'error-policy-job.ts');
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
});

const N = 3000;
const notJson = (seq: number) => seq % 100 === 7;
const poison = (seq: number) => seq % 100 === 42;
const inputValue = (seq: number) => (notJson(seq) ? `not json ${seq}` : JSON.stringify(poison(seq) ? { seq, poison: true } : { seq }));

/** Input, output and dead-letter topics (2 partitions each); the input written with N records, seq % 2 the partition. */
async function topics(label: string): Promise<{ input: string; output: string; dlq: string; folder: string }> {
  const made = await Promise.all(['in', 'out', 'dlq'].map((kind) => createTestTopic(brokers, `${label}-${kind}`, 2)));
  const folder = await mkdtemp(join(tmpdir(), 'weir-error-policy-'));
  for (const topic of made) cleanups.push(topic.remove);
  cleanups.push(() => rm(folder, { recursive: true, force: true }));
  const [input, output, dlq] = made.map((topic) => topic.topic) as [string, string, string];
  const connections = new ClusterConnections(brokers);
  try {
    const producer = new PlainProducer(connections);
    const records = Array.from({ length: N }, (_, seq) => ({
      topic: input,
      partition: seq % 2,
      key: Buffer.from(`k-${seq}`),
      value: Buffer.from(inputValue(seq)),
      headers: new Map([[Buffer.from('origin'), Buffer.from(`h-${seq}`)]]),
    }));
    for (let i = 0; i < records.length; i += 500) await producer.send(records.slice(i, i + 500), -1);
  } finally {
    await connections.close();
  }
  return { input, output, dlq, folder };
}

const seqsOf = (records: TopicRecord[]) => records.map((record) => (JSON.parse(String(record.value)) as { seq: number }).seq);
const metric = (client: JobClient, name: string) =>
  client
    .status()
    .vertices.flatMap((vertex) => Object.entries(vertex.operators))
    .find(([key]) => key === name)?.[1];
const header = (record: TopicRecord, name: string) => {
  const found = record.headers.find(([key]) => key?.toString() === name);
  return found?.[1]?.toString();
};

test("'skip' on the source and the map: output is the input less the bad records, and both are counted", async () => {
  const { input, output, folder } = await topics('ep-skip');
  process.env.EP_INPUT = input;
  process.env.EP_OUTPUT = output;
  process.env.EP_SOURCE_POLICY = 'skip';
  process.env.EP_MAP_POLICY = 'skip';
  delete process.env.EP_BOUNDED;
  const client = await startJob({ job, config: { parallelism: 2, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } } });
  try {
    assert.equal(await until('the source counts 30 skipped', async () => (metric(client, 'input.recordsSkipped') === 30 ? 30 : undefined)), 30);
    assert.equal(await until('the map counts 30 skipped', async () => (metric(client, 'check.recordsSkipped') === 30 ? 30 : undefined)), 30);
    const seqs = await until('the output has every good record', async () => {
      const read = seqsOf(await readTopic({ bootstrap: brokers, topic: output, until: 'last-stable-offset' }));
      return read.length >= N - 60 ? read : undefined;
    });
    const expected = Array.from({ length: N }, (_, seq) => seq).filter((seq) => !notJson(seq) && !poison(seq));
    assert.deepEqual(
      [...seqs].sort((a, b) => a - b),
      expected,
    );
    // The counts in Prometheus' text and per vertex in /api/job.
    const server = await startRestServer({ port: 0 });
    server.attach(client);
    try {
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      assert.match(metrics, /^weir_records_skipped\{job="error-policy",vertex="[^"]*kafka source[^"]*",operator="input"\} 30$/m, metrics);
      assert.match(metrics, /^weir_records_skipped\{job="error-policy",vertex="[^"]*check[^"]*",operator="check"\} 30$/m, metrics);
      const api = (await (await fetch(`${server.url}/api/job`)).json()) as { vertices: { operators: Record<string, number> }[] };
      assert.deepEqual(api.vertices.flatMap((vertex) => Object.entries(vertex.operators).filter(([key]) => key.endsWith('.recordsSkipped'))).sort(), [
        ['check.recordsSkipped', 30],
        ['input.recordsSkipped', 30],
      ]);
      // And on the dashboard, in a real browser: the "Bad records" column of the chain (source and map chained: 30 + 30).
      const browser = await launchBrowser();
      try {
        const page = await browser.newPage();
        await page.goto(`${server.url}/`);
        let seen: string[] = [];
        const badRecords = async () => {
          seen = await page.getByTestId('operator-row').evaluateAll((rows) => rows.map((row) => row.lastElementChild?.textContent ?? ''));
          return seen.some((text) => text.includes('60 skipped')) ? seen : undefined;
        };
        await until('"60 skipped" in the Bad records column', badRecords, 30_000).catch((error: Error) => {
          throw new Error(`${error.message}; the column shows ${JSON.stringify(seen)}`);
        });
      } finally {
        await browser.close();
      }
    } finally {
      await server.close();
    }
  } finally {
    await client.cancel();
  }
});

for (const own of [false, true]) {
  test(`dead letters under SIGKILL, ${own ? 'in a sink of their own (the policy sets its deliveryGuarantee)' : "in the output's transactions (the default)"}: read_committed output plus dead letters is the input, each once, and the dead letters carry their headers`, async () => {
    const { input, output, dlq, folder } = await topics(own ? 'ep-dlq-own' : 'ep-dlq');
    const env = {
      EP_DLQ_OWN: own ? '1' : '0',
      KAFKA_BROKERS: formatBootstrap(brokers),
      EP_INPUT: input,
      EP_OUTPUT: output,
      EP_DLQ: dlq,
      EP_SOURCE_POLICY: 'dlq',
      EP_MAP_POLICY: 'dlq',
      EP_BOUNDED: '1',
      EP_WORK_US: '3000',
    };
    const config = {
      parallelism: 2,
      workers: 2,
      batchSize: 20, // little in flight, so barriers pass the slow map quickly
      checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };
    const started = BigInt(Date.now());
    const first = startJobProcess(job, config, env);
    await until('the first run completes three checkpoints', async () =>
      /checkpoint 3\n/.test(first.stdout) || first.child.exitCode !== null ? true : undefined,
    );
    await sleep(300);
    assert.equal(first.child.exitCode, null, `the job ended before it could be killed: ${first.stderr}\n${first.stdout}`);
    first.child.kill('SIGKILL');
    assert.equal((await first.exit).signal, 'SIGKILL');
    const last = startJobProcess(job, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "error-policy" from checkpoint \d+/);

    const outputRecords = await readTopic({ bootstrap: brokers, topic: output });
    const outputs = seqsOf(outputRecords);
    const letters = await readTopic({ bootstrap: brokers, topic: dlq });
    // By default written in the same transactions as the output, by the output sink's producers
    // (transactional ids); with a sink of their own, by its producers only.
    const outputProducers = new Set(outputRecords.map((record) => record.producerId));
    const letterProducers = new Set(letters.map((record) => record.producerId));
    const producers = `dead letters by producers ${[...letterProducers].join(', ')}, output by ${[...outputProducers].join(', ')}`;
    assert.ok(
      [...letterProducers].every((id) => id >= 0n && outputProducers.has(id) !== own),
      producers,
    );
    const letterSeqs = letters.map((record) => {
      const text = String(record.value);
      return text.startsWith('not json ') ? Number(text.slice(9)) : (JSON.parse(text) as { seq: number }).seq;
    });
    const all = [...outputs, ...letterSeqs].sort((a, b) => a - b);
    assert.equal(all.length, N, `output ${outputs.length} + dead letters ${letters.length} = input ${N}`);
    assert.deepEqual(
      all,
      Array.from({ length: N }, (_, seq) => seq),
      'each input record exactly once in output plus dead letters',
    );
    assert.deepEqual(
      [...letterSeqs].sort((a, b) => a - b),
      Array.from({ length: N }, (_, seq) => seq).filter((seq) => notJson(seq) || poison(seq)),
    );
    for (const letter of letters) {
      assert.equal(header(letter, 'weir.dlq.version'), '1');
      // Stamped when it was written, not with the original's time: the topic's retention counts from
      // then (a dead letter of a record older than retention.ms was deleted by the next retention check).
      assert.ok(letter.timestamp >= started, `a dead letter's timestamp ${letter.timestamp} is when it was written (the job started at ${started})`);
      assert.ok(BigInt(header(letter, 'weir.dlq.timestamp') ?? '0') < started, "the original's timestamp is in weir.dlq.timestamp");
      const text = String(letter.value);
      if (text.startsWith('not json ')) {
        const seq = Number(text.slice(9));
        assert.equal(letter.key?.toString(), `k-${seq}`, 'the original key bytes');
        assert.equal(header(letter, 'origin'), `h-${seq}`, 'the original headers');
        assert.equal(header(letter, 'weir.dlq.topic'), input);
        assert.equal(header(letter, 'weir.dlq.partition'), String(seq % 2));
        assert.equal(header(letter, 'weir.dlq.offset'), String(Math.floor(seq / 2)));
        assert.equal(header(letter, 'weir.dlq.operator.uid'), 'input');
        assert.equal(header(letter, 'weir.dlq.error.class'), 'SyntaxError');
        assert.ok(header(letter, 'weir.dlq.timestamp') !== undefined);
      } else {
        const seq = (JSON.parse(text) as { seq: number }).seq;
        assert.equal(header(letter, 'weir.dlq.operator.uid'), 'check');
        assert.equal(header(letter, 'weir.dlq.operator.name'), 'check');
        assert.equal(header(letter, 'weir.dlq.error.class'), 'Error');
        assert.equal(header(letter, 'weir.dlq.error.message'), `poison record ${seq}`);
      }
    }
  });
}

test("'fail' on the source: the job fails at once (no restart meets the record again), naming topic, partition, offset and the record's bytes", async () => {
  const { input, output, folder } = await topics('ep-fail');
  process.env.EP_INPUT = input;
  process.env.EP_OUTPUT = output;
  delete process.env.EP_SOURCE_POLICY;
  process.env.EP_MAP_POLICY = 'skip';
  process.env.EP_BOUNDED = '1';
  // The default restart strategy: a record the deserializer cannot read fails the job without a restart.
  const client = await startJob({ job, config: { parallelism: 1, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } } });
  await assert.rejects(client.result, (error: Error & { code?: string }) => {
    assert.equal(error.code, 'DESERIALIZATION_FAILED', error.message);
    // seq 7 is the first record that is not JSON: partition 1, offset 3.
    assert.ok(error.message.includes(`cannot deserialize the record at ${input}/1 offset 3`), error.message);
    assert.ok(error.message.includes(`hex ${Buffer.from('not json 7').toString('hex')}, text "not json 7"`), error.message);
    return true;
  });
  assert.equal(client.status().restarts.length, 0);
});

test("'fail' on the map: the job fails naming the operator, the record and the job's line", async () => {
  const { input, output, folder } = await topics('ep-fail-map');
  process.env.EP_INPUT = input;
  process.env.EP_OUTPUT = output;
  process.env.EP_SOURCE_POLICY = 'skip';
  delete process.env.EP_MAP_POLICY;
  process.env.EP_BOUNDED = '1';
  const client = await startJob({
    job,
    config: { parallelism: 1, restartStrategy: { type: 'none' }, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } },
  });
  await assert.rejects(client.result, (error: Error & { code?: string }) => {
    assert.equal(error.code, 'RECORD_FAILED', error.message);
    assert.match(
      error.message,
      /operator "check" \(1\/1\) failed on a record \(value \d+ bytes, hex [0-9a-f]+, text "\{\\"seq\\":42,\\"poison\\":true\}"\): poison record 42/,
    );
    assert.match(error.message, /at check \(file:\/\/.*error-policy-job\.ts:\d+:\d+\)/);
    return true;
  });
});
