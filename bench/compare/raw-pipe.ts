/**
 * The raw client pipe of the side-by-side benchmark: the same job (read read_committed, parse,
 * running count per key, write) with the same client Weir uses (its protocol code over
 * @platformatic/kafka: partition-fetcher.ts, plain-producer.ts), and no engine. It is the limit
 * of this machine, not a peer: no transactions (plain produce, acks=all), no checkpoints, no state
 * kept anywhere but a Map, so a restart would count from zero. Each of `parallelism` worker
 * threads owns the input partitions p with p % parallelism === its index (the input is keyed so
 * every key lives in one partition: no exchange needed), fetches the next records while the last
 * ones are produced, and keeps one produce request in flight so the output keeps each key's order.
 * It runs with Weir's memory defaults (a fetch of at most 256 KiB over its partitions, a 24 MB young
 * generation per thread, no allocation-site pretenuring; docs/benchmarks.md, "Where the memory
 * goes") and loads the client as Weir does (kafka-protocol.ts, not the whole package).
 *
 *   node bench/compare/raw-pipe.ts <bootstrap> <input> <output> <parallelism> [bounded]
 */
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import { ClusterConnections, type TopicInfo } from '../../src/connectors/kafka/cluster-connections.ts';
import { parseBootstrap } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { murmur2 } from '../../src/connectors/kafka/murmur2.ts';
import { EARLIEST_OFFSET, fetchPartitions, LATEST_OFFSET, listOffsets, type PartitionFetchResult } from '../../src/connectors/kafka/partition-fetcher.ts';
import { PlainProducer } from '../../src/connectors/kafka/plain-producer.ts';
import { decodeRecords, type FetchedBatch } from '../../src/connectors/kafka/record-batch-reader.ts';
import type { TopicRecord } from '../../src/connectors/kafka/topic-record.ts';

/** The bytes one fetch takes over all of a loop's partitions (Weir's kafkaSource maxBytesPerFetch default). */
const FETCH_BYTES = 256 * 1024;
/** The young generation of each loop's thread, in MB (Weir's workerHeap.youngGenerationMb default). */
const YOUNG_GENERATION_MB = 24;

interface LoopSettings {
  bootstrap: string;
  input: string;
  output: string;
  parallelism: number;
  index: number;
  bounded: boolean;
}

interface In {
  seq: number;
  key: string;
  ts: number;
}

async function loop(settings: LoopSettings): Promise<number> {
  const connections = new ClusterConnections(parseBootstrap(settings.bootstrap, 'bootstrap'), { clientId: `weir-raw-pipe-${settings.index}` });
  const producer = new PlainProducer(connections);
  const input = await connections.topic(settings.input);
  const outputPartitions = (await connections.topic(settings.output)).partitions.length;
  const topics = new Map<string, TopicInfo>([[input.name, input]]);
  const mine = input.partitions.filter((entry) => entry.partition % settings.parallelism === settings.index);
  const positions = await listOffsets(connections, input, mine, 'read_committed', EARLIEST_OFFSET);
  const ends = settings.bounded ? await listOffsets(connections, input, mine, 'read_committed', LATEST_OFFSET) : undefined;
  const counts = new Map<string, number>();
  const todo = () => mine.filter((entry) => ends === undefined || (positions.get(entry.partition) as bigint) < (ends.get(entry.partition) as bigint));
  const fetchNext = () =>
    fetchPartitions(
      connections,
      topics,
      todo().map((entry) => ({ topic: input.name, partition: entry.partition, offset: positions.get(entry.partition) as bigint })),
      // Weir's source defaults: a fetch takes at most 1 MiB over all its partitions (its batches decoded one at a time).
      { isolation: 'read_committed', maxWaitMs: 100, maxBytesPerPartition: 1024 * 1024, maxBytesPerFetch: FETCH_BYTES },
    );
  let moved = 0;
  let producing: Promise<void> = Promise.resolve();
  let pending = fetchNext();
  while (todo().length > 0 || ends === undefined) {
    const results = await pending;
    for (const result of results) positions.set(result.partition, result.nextOffset);
    pending = todo().length > 0 ? fetchNext() : Promise.resolve([]); // the next fetch runs while this one is processed and produced
    const out = [];
    for (const result of results) {
      // A batch at a time, as Weir's source decodes them (record-batch-reader.ts).
      for (const record of result.batches.flatMap((batch) => batchRecords(batch, result))) {
        const value = JSON.parse(String(record.value)) as In;
        const count = (counts.get(value.key) ?? 0) + 1;
        counts.set(value.key, count);
        const key = Buffer.from(value.key);
        out.push({
          topic: settings.output,
          partition: (murmur2(key) & 0x7fffffff) % outputPartitions,
          key,
          value: Buffer.from(JSON.stringify({ seq: value.seq, key: value.key, ts: value.ts, count })),
        });
      }
    }
    await producing;
    if (out.length > 0) producing = producer.send(out, -1);
    moved += out.length;
  }
  await producing;
  await connections.close();
  return moved;
}

if (isMainThread) {
  const [bootstrap, input, output, parallelismText, bounded] = process.argv.slice(2);
  if (bootstrap === undefined || input === undefined || output === undefined) {
    console.error('usage: node bench/compare/raw-pipe.ts <bootstrap> <input> <output> <parallelism> [bounded]');
    process.exit(2);
  }
  const parallelism = Number(parallelismText ?? 1);
  const started = performance.now();
  const moved = await Promise.all(
    Array.from(
      { length: parallelism },
      (_, index) =>
        new Promise<number>((done, fail) => {
          const settings: LoopSettings = { bootstrap, input, output, parallelism, index, bounded: bounded === 'bounded' };
          const worker = new Worker(new URL(import.meta.url), { workerData: settings, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } });
          worker.once('message', done);
          worker.once('error', fail);
          worker.once('exit', (code) => fail(new Error(`raw pipe loop ${index} exited with code ${code}`)));
        }),
    ),
  );
  const total = moved.reduce((sum, value) => sum + value, 0);
  console.log(`raw pipe moved ${total} records in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.exit(0);
} else {
  const { parentPort } = await import('node:worker_threads');
  parentPort?.postMessage(await loop(workerData as LoopSettings));
}

function batchRecords(batch: FetchedBatch, result: PartitionFetchResult): TopicRecord[] {
  const records: TopicRecord[] = [];
  decodeRecords(batch, result.topic, result.partition, result.fetchOffset, records);
  return records;
}
