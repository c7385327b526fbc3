/**
 * A job reads Avro in the Schema Registry wire format and writes Avro in it, exactly-once, through a
 * real registry (Apicurio, started by the harness) and the real broker. The input topic holds N
 * Orders written by the reference client (@kafkajs/confluent-schema-registry) with bad records
 * among them: some with a wrong magic byte, some naming a schema id the registry does not know.
 * Under { deadLetter } the job is SIGKILLed mid-run and run again: read_committed output (decoded by
 * the reference client) plus dead letters is the input, each record once, the dead letters carrying
 * their original bytes and the reason. Under 'skip' the bad records are counted; under 'fail' the
 * job fails naming topic, partition and offset. A registry that is down at start, or an output
 * subject that does not hold the sink's schema, stops the job before it starts with one clear error.
 */
import assert from 'node:assert/strict';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic, type TopicRecord } from '../../../src/connectors/kafka/topic-reader.ts';
import { freePort } from '../../../src/local-kafka/ports.ts';
import { type JobClient, startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { testBrokers } from '../../harness/kafka.ts';
import { type SchemaRegistryServer, startSchemaRegistry } from '../../harness/schema-registry.ts';
import { until } from '../../harness/weir-run.ts';
import { type Order, orderSchema, type Total, totalSchema } from './avro-registry-job.ts';
import { jobTopics, produceValues } from './job-topics.ts';
import { recordsSkipped } from './registry-job-pipeline.ts';

const brokers = testBrokers();
const job = join(import.meta.dirname, 'avro-registry-job.ts');
const N = 2000;
const UNKNOWN_ID = 987654;
const wrongMagic = (seq: number) => seq % 100 === 7;
const unknownId = (seq: number) => seq % 100 === 13;
const bad = (seq: number) => wrongMagic(seq) || unknownId(seq);
const goodSeqs = Array.from({ length: N }, (_, seq) => seq).filter((seq) => !bad(seq));
const badSeqs = Array.from({ length: N }, (_, seq) => seq).filter(bad);

const cleanups: (() => Promise<void>)[] = [];
let server: SchemaRegistryServer;
let reference: SchemaRegistry;

before(async () => {
  server = await startSchemaRegistry();
  reference = new SchemaRegistry({ host: server.url });
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  await server?.stop();
});

/** Input, output and dead-letter topics (2 partitions each); the output schema registered under `<output>-value`; N input records, seq % 2 the partition. */
async function topics(label: string, options: { registerOutput?: boolean } = {}) {
  const { input, output, dlq, folder } = await jobTopics(label, cleanups);
  const { id } = await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(orderSchema) }, { subject: `${input}-value` });
  if (options.registerOutput !== false)
    await reference.register({ type: SchemaType.AVRO, schema: JSON.stringify(totalSchema) }, { subject: `${output}-value` });
  const values = await Promise.all(
    Array.from({ length: N }, async (_, seq): Promise<Buffer> => {
      const bytes = await reference.encode(id, { id: seq, amount: seq * 0.25, currency: seq % 3 === 0 ? 'EUR' : 'USD' } satisfies Order);
      if (wrongMagic(seq)) bytes[0] = 1;
      if (unknownId(seq)) bytes.writeInt32BE(UNKNOWN_ID, 1);
      return bytes;
    }),
  );
  await produceValues(input, values);
  const env = { KAFKA_BROKERS: formatBootstrap(brokers), AV_REGISTRY: server.url, AV_INPUT: input, AV_OUTPUT: output, AV_DLQ: dlq };
  return { input, output, dlq, folder, env };
}

/** The output read read_committed and decoded by the reference client. */
async function totals(output: string): Promise<{ records: TopicRecord[]; totals: Total[] }> {
  const records = await readTopic({ bootstrap: brokers, topic: output });
  return { records, totals: await Promise.all(records.map(async (record) => ({ ...(await reference.decode(record.value as Buffer)) }) as Total)) };
}

const header = (record: TopicRecord, name: string) => record.headers.find(([key]) => key?.toString() === name)?.[1]?.toString();
const seqOfLetter = (letter: TopicRecord) => Number(letter.key?.toString().slice(2));

describe('a job reading and writing Avro through a real Schema Registry', () => {
  test('dead letters under SIGKILL: read_committed output (decoded) plus dead letters is the input, each once', async () => {
    const { input, output, dlq, folder, env } = await topics('av-dlq');
    const config = {
      parallelism: 2,
      workers: 2,
      batchSize: 20,
      checkpointing: { interval: '200ms', storage: join(folder, 'checkpoints') },
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    };
    const runEnv = { ...env, AV_POLICY: 'dlq', AV_WORK_US: '2000' };
    const first = startJobProcess(job, config, runEnv);
    await until('the first run completes three checkpoints', async () =>
      /checkpoint 3\n/.test(first.stdout) || first.child.exitCode !== null ? true : undefined,
    );
    await sleep(300);
    assert.equal(first.child.exitCode, null, `the job ended before it could be killed: ${first.stderr}\n${first.stdout}`);
    first.child.kill('SIGKILL');
    assert.equal((await first.exit).signal, 'SIGKILL');
    const last = startJobProcess(job, config, runEnv);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "avro-registry" from checkpoint \d+/);

    const out = await totals(output);
    const letters = await readTopic({ bootstrap: brokers, topic: dlq });
    const all = [...out.totals.map((total) => total.id), ...letters.map(seqOfLetter)].sort((a, b) => a - b);
    assert.equal(all.length, N, `output ${out.totals.length} + dead letters ${letters.length} = input ${N}`);
    assert.deepEqual(
      all,
      Array.from({ length: N }, (_, seq) => seq),
      'each input record exactly once in output plus dead letters',
    );
    assert.deepEqual(
      out.totals.map((total) => total.id).sort((a, b) => a - b),
      goodSeqs,
    );
    for (const total of out.totals)
      assert.deepEqual(total, { id: total.id, cents: Math.round(total.id * 25), label: `${total.id % 3 === 0 ? 'EUR' : 'USD'}-${total.id}` });
    const outputId = (await reference.getLatestSchemaId(`${output}-value`)) as number;
    for (const record of out.records) assert.equal(record.value?.readInt32BE(1), outputId, 'written with the registered schema id');
    for (const letter of letters) {
      const seq = seqOfLetter(letter);
      assert.equal(letter.value?.[0], wrongMagic(seq) ? 1 : 0, 'the original bytes');
      assert.equal(header(letter, 'weir.dlq.topic'), input);
      assert.equal(header(letter, 'weir.dlq.partition'), String(seq % 2));
      assert.equal(header(letter, 'weir.dlq.offset'), String(Math.floor(seq / 2)));
      assert.match(
        header(letter, 'weir.dlq.error.message') ?? '',
        wrongMagic(seq) ? /unknown magic byte 1/ : new RegExp(`schema id ${UNKNOWN_ID} is unknown to schema registry ${server.url.replace(/[.]/g, '\\.')}`),
      );
    }
  });

  test("'skip': the output is the good records, the bad ones counted", async () => {
    const { output, folder, env } = await topics('av-skip');
    Object.assign(process.env, env, { AV_POLICY: 'skip', AV_WORK_US: '0' });
    const client = await startJob({ job, config: { parallelism: 2, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } } });
    await client.result;
    assert.equal(recordsSkipped(client), badSeqs.length);
    const out = await totals(output);
    assert.deepEqual(
      out.totals.map((total) => total.id).sort((a, b) => a - b),
      goodSeqs,
    );
  });

  test("'fail': the job fails naming topic, partition, offset and why", async () => {
    const { input, folder, env } = await topics('av-fail');
    Object.assign(process.env, env, { AV_POLICY: 'fail', AV_WORK_US: '0' });
    const client = await startJob({ job, config: { parallelism: 1, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } } });
    await assert.rejects(client.result, (error: Error & { code?: string }) => {
      assert.equal(error.code, 'DESERIALIZATION_FAILED', error.message);
      // seq 7 is the first bad record: partition 1, offset 3.
      assert.ok(error.message.includes(`cannot deserialize the record at ${input}/1 offset 3`), error.message);
      assert.match(error.message, /unknown magic byte 1/);
      return true;
    });
  });

  test("a registry down when the job meets a schema id: no good record is taken for bad (the task restarts until it answers); 'skip' skips only the bad ones", async () => {
    const { output, folder, env } = await topics('av-outage');
    // In front of the registry: schema lookups by id answer 503 until `outage` is over (the preflight's requests pass).
    let lookupsRefused = 0;
    let outage = true;
    const proxy = createServer((request, response) => {
      if (outage && request.url?.includes('/schemas/ids/')) {
        lookupsRefused++;
        response.writeHead(503).end('down for the test');
        return;
      }
      const target = new URL(request.url ?? '/', server.url);
      const forwarded = httpRequest(target, { method: request.method, headers: { ...request.headers, host: target.host } }, (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      });
      forwarded.on('error', () => response.writeHead(502).end());
      request.pipe(forwarded);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${new URL(server.url).pathname}`;
    Object.assign(process.env, env, { AV_REGISTRY: proxyUrl, AV_POLICY: 'skip', AV_WORK_US: '0' });
    const client = await startJob({
      job,
      config: {
        parallelism: 1,
        checkpointing: { interval: 200, storage: join(folder, 'checkpoints') },
        restartStrategy: { type: 'fixed-delay', attempts: 1000, delay: 200 },
      },
    });
    await until('the job to meet the outage', async () => (lookupsRefused > 0 && client.status().restarts.length > 0 ? true : undefined), 60_000);
    outage = false;
    await client.result;
    const skipped = client
      .status()
      .vertices.flatMap((vertex) => Object.entries(vertex.operators))
      .find(([key]) => key === 'input.recordsSkipped')?.[1];
    assert.equal(skipped, badSeqs.length, 'only the bad records are skipped');
    const out = await totals(output);
    assert.deepEqual(
      out.totals.map((total) => total.id).sort((a, b) => a - b),
      goodSeqs,
    );
  });

  test('a registry that is down at start: one clear error before the job starts', async () => {
    const { folder, env } = await topics('av-down');
    const down = `http://127.0.0.1:${await freePort()}`;
    Object.assign(process.env, env, { AV_REGISTRY: down, AV_POLICY: 'fail' });
    const error = await startJob({ job, config: { parallelism: 1, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } } }).then(
      async (client: JobClient) => {
        await client.cancel();
        return assert.fail('the job started without its registry');
      },
      (failure: Error & { code?: string }) => failure,
    );
    assert.equal(error.code, 'PREFLIGHT_FAILED', error.message);
    assert.match(error.message, new RegExp(`schema registry ${down.replace(/[.]/g, '\\.')}: GET /config unreachable: .*ECONNREFUSED`));
    assert.match(error.message, /kafka source .* "input"/);
    assert.match(error.message, /kafka sink .* "output"/);
  });

  test("an output subject that does not hold the sink's schema (autoRegister off): the job does not start, naming the subject", async () => {
    const { output, folder, env } = await topics('av-unregistered', { registerOutput: false });
    Object.assign(process.env, env, { AV_POLICY: 'fail' });
    await assert.rejects(
      startJob({ job, config: { parallelism: 1, checkpointing: { interval: 200, storage: join(folder, 'checkpoints') } } }),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'PREFLIGHT_FAILED', error.message);
        assert.ok(
          error.message.includes(`subject "${output}-value" does not hold the schema dev.weir.test.Total the sink writes (autoRegister is off)`),
          error.message,
        );
        return true;
      },
    );
  });
});
