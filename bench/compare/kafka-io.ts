/**
 * Kafka input and output of the side-by-side benchmark: the input writer and the steady producer
 * (an idempotent producer of @platformatic/kafka); and, with Weir's own protocol code, the
 * read_committed watcher of an output (visibility times and latencies) and the audit every
 * system's output goes through (readTopic, read_committed).
 *
 * Records: input {seq, key, ts} with key `key-<seq % KEYS>` in partition seq % PARTITIONS (so every
 * key lives in one partition and its records are in seq order); output {seq, key, ts, count}. The
 * count of the record seq is then known in advance: floor(seq / KEYS) + 1.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { type MessageToProduce, Producer } from '@platformatic/kafka';
import { auditTopic } from '../../src/audit/audit-topic.ts';
import { ClusterConnections, type TopicInfo } from '../../src/connectors/kafka/cluster-connections.ts';
import { type BrokerAddress, formatBootstrap } from '../../src/connectors/kafka/kafka-connection-options.ts';
import {
  EARLIEST_OFFSET,
  fetchedRecords,
  fetchPartitions,
  LATEST_OFFSET,
  listOffsets,
  type PartitionFetchResult,
} from '../../src/connectors/kafka/partition-fetcher.ts';
import { decodeRecords } from '../../src/connectors/kafka/record-batch-reader.ts';
import type { TopicRecord } from '../../src/connectors/kafka/topic-record.ts';

export const PARTITIONS = 4;
export const KEYS = 1000;

export const keyOf = (seq: number) => `key-${seq % KEYS}`;
export const expectedCount = (seq: number) => Math.floor(seq / KEYS) + 1;

function inputRecord(topic: string, seq: number, ts: number): MessageToProduce {
  const key = keyOf(seq);
  return { topic, partition: seq % PARTITIONS, key: Buffer.from(key), value: Buffer.from(`{"seq":${seq},"key":"${key}","ts":${ts}}`) };
}

/**
 * The input's writer: an idempotent producer (acks=all) of the client Weir uses, so that a retried
 * request can never duplicate input records (a plain producer's retry after a partial failure can).
 */
function inputProducer(brokers: BrokerAddress[], clientId: string): Producer {
  return new Producer({ clientId, bootstrapBrokers: [formatBootstrap(brokers)], idempotent: true, acks: -1, retries: 10 });
}

/** Waits (up to 60 s) until each of these topics has `partitions` partitions, each with a leader that answers ListOffsets. */
export async function waitForTopics(brokers: BrokerAddress[], names: string[], partitions = PARTITIONS): Promise<void> {
  const connections = new ClusterConnections(brokers, { clientId: 'weir-compare-topics' });
  try {
    const deadline = Date.now() + 60_000;
    for (const name of names) {
      for (;;) {
        try {
          const topic = await connections.topic(name);
          if (topic.partitions.length === partitions && topic.partitions.every((entry) => entry.leaderId >= 0)) {
            await listOffsets(connections, topic, topic.partitions, 'read_uncommitted', LATEST_OFFSET);
            break;
          }
          if (Date.now() > deadline) throw new Error(`topic ${name} has ${topic.partitions.length} partitions with leaders after 60 s, not ${partitions}`);
        } catch (error) {
          if (Date.now() > deadline) throw error;
        }
        await sleep(100);
      }
    }
  } finally {
    await connections.close();
  }
}

/** Records in a topic (the sum of its partitions' high watermarks; no transactions write the input). */
export async function topicSize(brokers: BrokerAddress[], name: string): Promise<number> {
  const connections = new ClusterConnections(brokers, { clientId: 'weir-compare-topics' });
  try {
    const topic = await connections.topic(name);
    const ends = await listOffsets(connections, topic, topic.partitions, 'read_uncommitted', LATEST_OFFSET);
    let size = 0;
    for (const end of ends.values()) size += Number(end);
    return size;
  } finally {
    await connections.close();
  }
}

/** Writes records first..first+count-1 as fast as the broker takes them. */
export async function fillInput(brokers: BrokerAddress[], topic: string, first: number, count: number): Promise<void> {
  const producer = inputProducer(brokers, 'weir-compare-fill');
  try {
    const now = Date.now();
    const chunk = 4000;
    for (let start = first; start < first + count; start += chunk) {
      await producer.send({ messages: Array.from({ length: Math.min(chunk, first + count - start) }, (_, i) => inputRecord(topic, start + i, now)) });
    }
  } finally {
    await producer.close();
  }
}

/**
 * Produces records at a steady rate, each carrying its produce time (ts), from seq `first` on, until
 * stop() is called or `seconds` have passed; `produced` is the next seq not yet written.
 */
export class SteadyProducer {
  produced: number;
  readonly done: Promise<void>;
  #stopped = false;

  constructor(brokers: BrokerAddress[], topic: string, first: number, rate: number, seconds = Number.POSITIVE_INFINITY) {
    this.produced = first;
    this.done = this.#run(brokers, topic, first, rate, seconds);
    this.done.catch(() => {}); // a failure surfaces where done or stop() is awaited
  }

  stop(): Promise<void> {
    this.#stopped = true;
    return this.done;
  }

  async #run(brokers: BrokerAddress[], topic: string, first: number, rate: number, seconds: number): Promise<void> {
    const producer = inputProducer(brokers, 'weir-compare-producer');
    try {
      const started = Date.now();
      while (!this.#stopped && Date.now() - started < seconds * 1000) {
        const due = first + Math.floor(((Date.now() - started) / 1000) * rate);
        if (due > this.produced) {
          const now = Date.now();
          const from = this.produced;
          await producer.send({ messages: Array.from({ length: due - from }, (_, i) => inputRecord(topic, from + i, now)) });
          this.produced = due;
        }
        await sleep(5);
      }
    } finally {
      await producer.close();
    }
  }
}

/**
 * Tails an output topic read_committed from its start, as a consumer of the job's output would, and
 * notes when records become visible. Records are only counted until `parseFrom` is set; from then
 * on each is parsed for its produce time (ts): visibility latency = arrival - ts.
 */
export class OutputWatcher {
  /** Records seen (read_committed, control records and aborted data excluded). */
  seen = 0;
  firstVisibleAt: number | undefined;
  /** Parse records once this many have been seen; undefined: only count. */
  parseFrom: number | undefined;
  /** Latencies of records whose seq is at least latencyFrom and below latencyTo. */
  latencyFrom = Number.POSITIVE_INFINITY;
  latencyTo = Number.POSITIVE_INFINITY;
  readonly latencies: number[] = [];
  /** When the first record produced after this time (ts) became visible; set by the watcher. */
  freshAfter: number | undefined;
  freshVisibleAt: number | undefined;
  #stopped = false;
  #waiters: { test: () => boolean; done: () => void; fail: (error: Error) => void }[] = [];
  #error: Error | undefined;
  readonly done: Promise<void>;

  constructor(brokers: BrokerAddress[], topic: string) {
    this.done = this.#run(brokers, topic).catch((error: unknown) => {
      // Fail every waiter at once instead of letting each time out.
      for (const waiter of this.#waiters) waiter.fail(error instanceof Error ? error : new Error(String(error)));
      this.#waiters = [];
      this.#error = error instanceof Error ? error : new Error(String(error));
    });
  }

  stop(): Promise<void> {
    this.#stopped = true;
    return this.done;
  }

  /** Resolves when test() holds (checked after every fetch), or rejects after timeoutMs. */
  async until(test: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (test()) return;
    if (this.#error !== undefined) throw new Error(`the output reader failed: ${this.#error.message}`);
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((done, fail) => {
        this.#waiters.push({ test, done, fail: (error) => fail(new Error(`the output reader failed while waiting for ${what}: ${error.message}`)) });
        timer = setTimeout(
          () => fail(new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what} (${this.seen} records visible)`)),
          timeoutMs,
        );
      });
    } finally {
      clearTimeout(timer);
    }
  }

  async #run(brokers: BrokerAddress[], name: string): Promise<void> {
    const connections = new ClusterConnections(brokers, { clientId: 'weir-compare-watcher' });
    try {
      const topic = await connections.topic(name);
      const topics = new Map<string, TopicInfo>([[name, topic]]);
      const positions = await listOffsets(connections, topic, topic.partitions, 'read_committed', EARLIEST_OFFSET);
      let failingSince: number | undefined;
      while (!this.#stopped) {
        let results: Awaited<ReturnType<typeof fetchPartitions>>;
        try {
          results = await fetchPartitions(
            connections,
            topics,
            topic.partitions.map((entry) => ({ topic: name, partition: entry.partition, offset: positions.get(entry.partition) as bigint })),
            { isolation: 'read_committed', maxWaitMs: 20, maxBytesPerPartition: 4 * 1024 * 1024 },
          );
          failingSince = undefined;
        } catch (error) {
          // A busy broker can time a fetch out: retry for a while before giving up.
          failingSince ??= Date.now();
          if (Date.now() - failingSince > 60_000) throw error;
          await sleep(200);
          continue;
        }
        const now = Date.now();
        for (const result of results) {
          positions.set(result.partition, result.nextOffset);
          // Only counting: the batches' headers say how many records they hold, so the harness
          // decodes nothing and takes as little CPU from the system under test as it can.
          const visible = countRecords(result);
          if (visible === 0) continue;
          this.firstVisibleAt ??= now;
          if (this.parseFrom === undefined || this.seen + visible <= this.parseFrom) {
            this.seen += visible;
            continue;
          }
          const records = fetchedRecords(result);
          for (const record of records) {
            this.seen++;
            const { seq, ts } = JSON.parse(String(record.value)) as { seq: number; ts: number };
            if (seq >= this.latencyFrom && seq < this.latencyTo) this.latencies.push(now - ts);
            if (this.freshAfter !== undefined && this.freshVisibleAt === undefined && ts > this.freshAfter) this.freshVisibleAt = now;
          }
        }
        this.#waiters = this.#waiters.filter((waiter) => {
          if (!waiter.test()) return true;
          waiter.done();
          return false;
        });
      }
    } finally {
      await connections.close();
    }
  }
}

/**
 * Samples the output's high watermarks (records written, committed or not) every `everyMs`: the
 * processing rate without the steps that commits put into visibility.
 */
export class WrittenSampler {
  readonly samples: { at: number; written: number }[] = [];
  #stopped = false;
  readonly done: Promise<void>;

  constructor(brokers: BrokerAddress[], topic: string, everyMs = 100) {
    this.done = this.#run(brokers, topic, everyMs).catch(() => {}); // no samples: the steady rate is reported as unknown
  }

  stop(): Promise<void> {
    this.#stopped = true;
    return this.done;
  }

  /**
   * Records per second from the last sample at or below `low` records written to the first at or
   * above `high` (so a fast run between two samples still gets a rate, over a slightly wider span).
   */
  rateBetween(low: number, high: number): number | undefined {
    const first = this.samples.findLast((sample) => sample.written <= low) ?? this.samples[0];
    const last = this.samples.find((sample) => sample.written >= high);
    if (first === undefined || last === undefined || last.at <= first.at) return undefined;
    return ((last.written - first.written) * 1000) / (last.at - first.at);
  }

  async #run(brokers: BrokerAddress[], name: string, everyMs: number): Promise<void> {
    const connections = new ClusterConnections(brokers, { clientId: 'weir-compare-sampler' });
    try {
      const topic = await connections.topic(name);
      while (!this.#stopped) {
        // A failed sample is a gap in the series, not an error.
        const ends = await listOffsets(connections, topic, topic.partitions, 'read_uncommitted', LATEST_OFFSET).catch(() => undefined);
        if (ends !== undefined) {
          let written = 0;
          for (const end of ends.values()) written += Number(end);
          this.samples.push({ at: Date.now(), written });
        }
        await sleep(everyMs);
      }
    } finally {
      await connections.close();
    }
  }
}

export interface Audit {
  ok: boolean;
  /** Records read read_committed. */
  records: number;
  duplicates: number;
  missing: number;
  /** Records whose count is not the key's running count at that record, or whose key is not the record's. */
  wrongCounts: number;
  /** Records with a seq never written to the input. */
  unknown: number;
}

/**
 * The audit every system's output goes through: the whole output read read_committed with Weir's
 * reader; every input record seq 0..total-1 must appear exactly once, with its key's exact running count.
 */
export async function auditOutput(brokers: BrokerAddress[], topic: string, total: number): Promise<Audit> {
  const audit = await auditTopic({
    bootstrap: brokers,
    topic,
    timeoutMs: 120_000,
    parse: (record) => {
      const value = JSON.parse(String(record.value)) as { seq: number; key: string; count: number };
      return { seq: value.seq, key: value.key, count: value.count, recordKey: String(record.key) };
    },
    idOf: (output) => output.seq,
    expected: { kind: 'sequence', count: total },
    check: (output, seq) => output.count === expectedCount(seq) && output.key === keyOf(seq) && output.recordKey === output.key,
  });
  return {
    ok: audit.ok,
    records: audit.records,
    duplicates: audit.duplicates.copies,
    missing: audit.missing.ids,
    wrongCounts: audit.wrong.records,
    unknown: audit.unexpected.records,
  };
}

/**
 * The records of a fetch result at or past its fetch offset (aborted transactions and control
 * batches are filtered out already), from the batches' headers: only a batch the fetch starts in
 * the middle of is decoded.
 */
function countRecords(result: PartitionFetchResult): number {
  let count = 0;
  for (const batch of result.batches) {
    if (batch.firstOffset >= result.fetchOffset) count += batch.recordCount;
    else {
      const records: TopicRecord[] = [];
      decodeRecords(batch, result.topic, result.partition, result.fetchOffset, records);
      count += records.length;
    }
  }
  return count;
}
