import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, ConnectionOptions } from '@platformatic/kafka';
import type { SourceBatch, SourceReader, SourceReaderContext } from '../../core/connector/source.ts';
import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { DEAD_LETTER_TAG, type DeadLetterRecord, describeError, previewBytes, type RecordErrorPolicy } from '../../core/functions/dead-letter.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import type { MetricCounter } from '../../core/metrics/metric-group.ts';
import { keyHash } from '../../state/key-group-range-assignment.ts';
import { ClusterConnections, type TopicInfo } from './cluster-connections.ts';
import { recordErrorPolicy } from './dead-letter-sink.ts';
import { decodeNextBatch, type FetchedQueue } from './fetched-queue.ts';
import { type BrokerAddress, formatBootstrap } from './kafka-connection-options.ts';
import { resolveKafkaConnection } from './kafka-default-connection.ts';
import { loadAdmin } from './kafka-protocol.ts';
import type { ParsedKafkaSourceOptions } from './kafka-source-options.ts';
import type { KafkaSplit } from './kafka-split.ts';
import { OFFSET_OUT_OF_RANGE, resolveOutOfRange } from './offset-out-of-range.ts';
import { EARLIEST_OFFSET, fetchPartitions, type IsolationLevel, LATEST_OFFSET, listOffsets, type TopicRecord } from './partition-fetcher.ts';
import { resolveStartingOffsets } from './resolve-starting-offsets.ts';
import { subscribedTopics } from './subscribed-topics.ts';

const RETRIABLE_FETCH_ERRORS = new Set([3, 5, 6, 7, 74, 75, 100]); // unknown partition, leader not available, not leader, timeout, fenced/unknown leader epoch, unknown topic id

/**
 * A Kafka source subtask's reader: its splits (topic partitions) with their next offsets, fetched
 * read_committed with Weir's own aborted-transaction filtering, emitted round-robin over the
 * partitions; the offsets are its checkpointed state. Finds new partitions (partition discovery),
 * retries fetches while a leader moves, and commits the checkpointed offsets to the consumer
 * group (for monitoring only) when a checkpoint completes.
 */
export class KafkaSourceReader<T> implements SourceReader<T, KafkaSplit> {
  readonly #options: ParsedKafkaSourceOptions<T>;
  readonly #isolation: IsolationLevel;
  readonly #bootstrap: BrokerAddress[];
  readonly #connection: ConnectionOptions;
  #connections!: ClusterConnections;
  #splits: KafkaSplit[] = [];
  #topics = new Map<string, TopicInfo>();
  #failingSince: number | undefined;
  /** Records fetched but not emitted yet, by split, with the offset to go on from once they are. */
  readonly #queues = new Map<KafkaSplit, FetchedQueue>();
  /** The deserializer's preparation of a batch (schemas fetched), awaited before the next emission. */
  #preparing: Promise<void> | undefined;
  /** Per split: the end a reader of its isolation sees (last stable offset, or high watermark), and the timestamp of the last record emitted. */
  readonly #lag = new Map<string, { end: bigint; lastTimestamp: number; split: KafkaSplit }>();
  /** Fetches so far: which partition goes first in the next one. */
  #fetchRound = 0;
  /** The splits each checkpoint took, until it completes (offsets committed to the group then). */
  readonly #snapshots = new Map<number, KafkaSplit[]>();
  #admin: Admin | undefined;

  readonly #context: SourceReaderContext;
  readonly #discoveryMs: number;
  /** "topic:partition" of every split any subtask reads or has read. */
  readonly #known = new Set<string>();
  #nextDiscovery = 0;
  readonly #errorPolicy: RecordErrorPolicy;
  #skipped: MetricCounter | undefined;
  #deadLetters: MetricCounter | undefined;
  #warnedSkip = false;

  constructor(options: ParsedKafkaSourceOptions<T>, context: SourceReaderContext, discoveryMs: number) {
    this.#options = options;
    this.#context = context;
    this.#discoveryMs = discoveryMs;
    this.#isolation = options.isolation;
    this.#errorPolicy = recordErrorPolicy(options.onDeserializationError);
    const kafka = resolveKafkaConnection(options, 'kafkaSource');
    this.#bootstrap = kafka.bootstrap;
    this.#connection = kafka.connection;
  }

  async open(splits: KafkaSplit[], allSplits: KafkaSplit[]): Promise<void> {
    const owner = `the kafka source (subtask ${this.#context.subtaskIndex})`;
    this.#connections = new ClusterConnections(this.#bootstrap, {
      clientId: 'weir-source',
      ...this.#connection,
      retryTimeoutMs: this.#options.retryTimeout,
      owner,
    });
    this.#splits = splits.map((split) => ({ ...split }));
    for (const split of [...allSplits, ...splits]) this.#known.add(`${split.topic}:${split.partition}`);
    this.#nextDiscovery = Date.now() + this.#discoveryMs;
    await this.#refreshMetadata();
    await resolveStartingOffsets(this.#connections, this.#topics, this.#splits, this.#options, {
      bootstrap: this.#bootstrap,
      connection: this.#connection,
    });
    for (const split of this.#splits) {
      if (split.end !== undefined) continue;
      const info = this.#topics.get(split.topic) as TopicInfo;
      const ends = await listOffsets(
        this.#connections,
        info,
        info.partitions.filter((entry) => entry.partition === split.partition),
        this.#isolation,
        LATEST_OFFSET,
      );
      split.end = ends.get(split.partition) ?? 0n;
    }
  }

  async pollNext(max: number): Promise<T[] | null> {
    return this.#poll(max, undefined, undefined);
  }

  /** With each record's partition ("topic:partition") and Kafka timestamp, for event time. */
  async pollNextBatch(max: number): Promise<SourceBatch<T> | null> {
    const splitIds: string[] | undefined = this.#context.tracksSplits === true ? [] : undefined;
    const timestamps: number[] = [];
    const records = await this.#poll(max, splitIds, timestamps);
    return records === null ? null : { records, splitIds, timestamps };
  }

  async #poll(max: number, splitIds: string[] | undefined, timestamps: number[] | undefined): Promise<T[] | null> {
    if (this.#discoveryMs > 0 && Date.now() >= this.#nextDiscovery) await this.#discoverPartitions();
    const live = this.#splits.filter((split) => split.end === null || (split.offset as bigint) < (split.end as bigint));
    if (live.length === 0) return this.#options.bounded ? null : [];
    if (this.#preparing !== undefined) {
      const preparing = this.#preparing;
      this.#preparing = undefined;
      await preparing; // a failure (the registry down) fails the task, which restarts from its checkpoint: no record is taken for bad
    }
    if (this.#queues.size === 0) await this.#fetch(live);
    // Emit at most `max` records, round-robin over the partitions' fetched records. A split's offset
    // moves with every record emitted, so a snapshot always names the next record not yet emitted.
    const out: T[] = [];
    const deserialize = this.#options.deserializer;
    const prepare = (deserialize as Partial<PreparingDeserializer>).prepare;
    for (let progressed = true; progressed && out.length < max; ) {
      progressed = false;
      for (const split of live) {
        const queue = this.#queues.get(split);
        if (queue === undefined) continue;
        if (queue.next >= queue.records.length && !decodeNextBatch(queue, split)) {
          split.offset = queue.nextOffset; // past the markers and aborted batches of that fetch too
          this.#queues.delete(split);
          continue;
        }
        if (prepare !== undefined && queue.prepared !== queue.records) {
          // Before a batch's first record: the deserializer gets what it needs for the whole batch (a registry's schemas).
          queue.prepared = queue.records;
          const preparing = prepare.call(deserialize, queue.records);
          if (preparing !== undefined) {
            this.#preparing = preparing;
            return out;
          }
        }
        const take = Math.min(queue.records.length - queue.next, Math.max(1, Math.floor((max - out.length) / live.length)));
        const splitId = splitIds === undefined ? '' : `${split.topic}:${split.partition}`;
        let lastTimestamp: bigint | undefined; // of the records emitted now, for the lag in seconds (once per split, not per record)
        for (let i = 0; i < take && out.length < max; i++) {
          const record = queue.records[queue.next++] as TopicRecord;
          let value: T;
          try {
            value = deserialize(record);
          } catch (error) {
            this.#onDeserializationError(error, record); // throws under 'fail'
            split.offset = record.offset + 1n;
            progressed = true;
            continue;
          }
          out.push(value);
          if (record.timestamp >= 0n) lastTimestamp = record.timestamp;
          splitIds?.push(splitId);
          timestamps?.push(record.timestamp >= 0n ? Number(record.timestamp) : Number.NaN); // -1: the record has no timestamp
          split.offset = record.offset + 1n;
          progressed = true;
        }
        if (lastTimestamp !== undefined) {
          const lag = this.#lag.get(`${split.topic}/${split.partition}`);
          if (lag !== undefined) lag.lastTimestamp = Number(lastTimestamp);
        }
        if (queue.next >= queue.records.length && queue.nextBatch >= queue.batches.length) {
          split.offset = queue.nextOffset; // past the markers and aborted batches of that fetch too
          this.#queues.delete(split);
        }
      }
    }
    return out;
  }

  async #fetch(live: KafkaSplit[]): Promise<void> {
    // The order rotates on every fetch: a broker returns a batch larger than a partition's share of
    // maxBytesPerFetch only to the first partition with data (KIP-74), so each partition is that
    // first one in turn, as the Java consumer does it.
    const first = this.#fetchRound++ % live.length;
    const positions = [];
    for (let i = 0; i < live.length; i++) {
      const split = live[(first + i) % live.length] as KafkaSplit;
      positions.push({ topic: split.topic, partition: split.partition, offset: split.offset as bigint });
    }
    let results: Awaited<ReturnType<typeof fetchPartitions>>;
    try {
      results = await fetchPartitions(this.#connections, this.#topics, positions, {
        isolation: this.#isolation,
        maxWaitMs: this.#options.maxWaitMs,
        maxBytesPerPartition: this.#options.maxBytesPerPartition,
        maxBytesPerFetch: this.#options.maxBytesPerFetch,
      });
      this.#failingSince = undefined;
    } catch (error) {
      if ((error as { kafkaErrorCode?: number }).kafkaErrorCode === OFFSET_OUT_OF_RANGE)
        await this.#onOffsetOutOfRange(error as { topic: string; partition: number }, live);
      else await this.#onFetchError(error);
      return;
    }
    for (const result of results) {
      const split = live.find((entry) => entry.topic === result.topic && entry.partition === result.partition) as KafkaSplit;
      this.#trackLag(split, this.#isolation === 'read_committed' ? result.lastStableOffset : result.highWatermark);
      const end = split.end ?? null;
      const nextOffset = end !== null && result.nextOffset > end ? end : result.nextOffset;
      const queue: FetchedQueue = { batches: result.batches, nextBatch: 0, fetchOffset: result.fetchOffset, end, records: [], next: 0, nextOffset };
      if (decodeNextBatch(queue, split)) this.#queues.set(split, queue);
      else split.offset = nextOffset;
    }
  }

  /**
   * Consumer lag per partition, as gauges of the source (`lag/<topic>/<partition>/records` and
   * `.../seconds`): records between the next one to emit and the end a reader of the source's
   * isolation sees; seconds since the timestamp of the last record emitted while records are
   * waiting (0 when caught up), as Kafka's records-lag and Flink's fetch lag tell them.
   */
  #trackLag(split: KafkaSplit, end: bigint): void {
    const key = `${split.topic}/${split.partition}`;
    const known = this.#lag.get(key);
    if (known !== undefined) {
      known.end = end;
      known.split = split;
      return;
    }
    const entry = { end, lastTimestamp: Number.NaN, split };
    this.#lag.set(key, entry);
    const records = () => {
      const behind = entry.end - (entry.split.offset ?? entry.end);
      return behind > 0n ? Number(behind) : 0;
    };
    this.#context.metrics?.gauge(`lag/${key}/records`, records);
    this.#context.metrics?.gauge(`lag/${key}/seconds`, () =>
      records() === 0 || Number.isNaN(entry.lastTimestamp) ? 0 : Math.max(0, (Date.now() - entry.lastTimestamp) / 1000),
    );
  }

  snapshotState(checkpointId: number): KafkaSplit[] {
    const splits = this.#splits.map((split) => ({ ...split }));
    if (this.#options.groupId !== undefined) this.#snapshots.set(checkpointId, splits);
    return splits;
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    // For monitoring only (as in Flink): lag tools see the offsets of the completed checkpoint; the
    // checkpoint itself holds the offsets a restore uses, and a failed commit here never fails the job.
    const splits = this.#snapshots.get(checkpointId);
    for (const id of this.#snapshots.keys()) if (id <= checkpointId) this.#snapshots.delete(id);
    const groupId = this.#options.groupId;
    if (groupId === undefined || splits === undefined || splits.length === 0) return;
    const AdminClient = await loadAdmin(); // before the check: two completions at once must not both create one
    this.#admin ??= new AdminClient({ clientId: 'weir-source-offsets', bootstrapBrokers: [formatBootstrap(this.#bootstrap)], ...this.#connection });
    const byTopic = new Map<string, { partition: number; offset: bigint }[]>();
    for (const split of splits) byTopic.set(split.topic, [...(byTopic.get(split.topic) ?? []), { partition: split.partition, offset: split.offset as bigint }]);
    await this.#admin
      .alterConsumerGroupOffsets({ groupId, topics: [...byTopic].map(([name, partitionOffsets]) => ({ name, partitionOffsets })) })
      .catch(() => {});
  }

  async close(): Promise<void> {
    await this.#admin?.close().catch(() => {});
    await this.#connections?.close().catch(() => {});
  }

  /**
   * New partitions (of the subscribed topics, or of new topics matching the pattern): each one is
   * taken by the subtask a stable hash of its name picks, from its earliest offset; the others
   * just remember it. The split then lives in that subtask's checkpointed state like any other.
   */
  async #discoverPartitions(): Promise<void> {
    this.#nextDiscovery = Date.now() + this.#discoveryMs;
    let topics: TopicInfo[];
    try {
      topics = await subscribedTopics(this.#connections, this.#options.topics);
    } catch {
      return; // discovery is retried at the next interval
    }
    for (const info of topics) {
      for (const partition of info.partitions) {
        const key = `${info.name}:${partition.partition}`;
        if (this.#known.has(key)) continue;
        this.#known.add(key);
        if (keyHash(key) % this.#context.parallelism !== this.#context.subtaskIndex) continue;
        this.#topics.set(info.name, info);
        const start = await listOffsets(this.#connections, info, [partition], this.#isolation, EARLIEST_OFFSET);
        this.#splits.push({ topic: info.name, partition: partition.partition, offset: start.get(partition.partition) ?? 0n, end: null });
      }
    }
  }

  async #refreshMetadata(): Promise<void> {
    for (const topic of new Set(this.#splits.map((split) => split.topic))) this.#topics.set(topic, await this.#connections.topic(topic));
  }

  /** The deserializer threw on `record`: fail naming where it is and its first bytes, skip it (counted), or send it to the dead-letter topic. */
  #onDeserializationError(error: unknown, record: TopicRecord): void {
    const policy = this.#errorPolicy;
    const where = `${record.topic}/${record.partition} offset ${record.offset}`;
    if (policy === 'fail') {
      const message = error instanceof Error ? error.message : String(error);
      const failure = new WeirError(
        'DESERIALIZATION_FAILED',
        `kafka source cannot deserialize the record at ${where} (timestamp ${record.timestamp}, key ${previewBytes(record.key)}, value ${previewBytes(record.value)}): ${withUserCodeLocation(message, error instanceof Error ? error.stack : undefined)}`,
        {
          hint: "fix the producer or the deserializer; or set kafkaSource's onDeserializationError to 'skip' (count and drop such records) or { deadLetter: { topic } } (send them to a topic)",
          cause: error,
        },
      );
      throw failure;
    }
    const context = this.#context;
    if (policy === 'skip') {
      this.#skipped ??= context.metrics?.counter('recordsSkipped');
      this.#skipped?.inc();
      if (!this.#warnedSkip) {
        this.#warnedSkip = true;
        processLog().warn(
          `kafka source skips records it cannot deserialize (onDeserializationError 'skip'), the first at ${where}: ${describeError(error).errorMessage}; the others are counted in recordsSkipped`,
        );
      }
      return;
    }
    const letter: DeadLetterRecord = {
      topic: policy.deadLetterTopic,
      key: record.key,
      value: record.value,
      headers: record.headers,
      origin: { topic: record.topic, partition: record.partition, offset: record.offset },
      timestamp: record.timestamp >= 0n ? Number(record.timestamp) : Number.NaN,
      operatorUid: context.uid ?? '',
      operatorName: context.name ?? 'kafka source',
      ...describeError(error),
    };
    if (context.output?.(DEAD_LETTER_TAG, letter, Number.NaN) !== true) {
      throw new WeirError('INTERNAL', `kafka source: no dead-letter stream reads the dead letters of ${where}`, { fault: 'internal' });
    }
    this.#deadLetters ??= context.metrics?.counter('deadLetters');
    this.#deadLetters?.inc();
  }

  /** A split's offset is no longer in its partition: fail naming the lost range, or go on from earliest or latest (onOffsetOutOfRange). */
  async #onOffsetOutOfRange(error: { topic: string; partition: number }, live: KafkaSplit[]): Promise<void> {
    const split = live.find((entry) => entry.topic === error.topic && entry.partition === error.partition);
    if (split === undefined) throw error;
    const info = this.#topics.get(split.topic) as TopicInfo;
    const partitions = info.partitions.filter((entry) => entry.partition === split.partition);
    const list = async (timestamp: bigint) =>
      (await listOffsets(this.#connections, info, partitions, 'read_uncommitted', timestamp)).get(split.partition) as bigint;
    const range = {
      topic: split.topic,
      partition: split.partition,
      offset: split.offset as bigint,
      earliest: await list(EARLIEST_OFFSET),
      latest: await list(LATEST_OFFSET),
    };
    if (range.offset >= range.earliest && range.offset <= range.latest) return; // back in range (a leader change): fetch again
    const lost = this.#context.metrics?.counter('recordsLostOutOfRange');
    split.offset = resolveOutOfRange(range, this.#options.onOffsetOutOfRange, lost, (line) => processLog().warn(line));
  }

  async #onFetchError(error: unknown): Promise<void> {
    const code = (error as { kafkaErrorCode?: number }).kafkaErrorCode;
    const network = code === undefined && !(error instanceof WeirError && error.code !== 'BROKER_UNREACHABLE');
    if (code !== undefined && !RETRIABLE_FETCH_ERRORS.has(code)) throw error;
    if (!network && code === undefined) throw error;
    // A leader moved or a broker restarts: find the leaders again and retry, for up to a minute.
    this.#failingSince ??= this.#connections.outage.unreachableSince ?? Date.now(); // connecting may have waited already
    if (Date.now() - this.#failingSince > this.#options.retryTimeout) throw error;
    await sleep(200);
    await this.#refreshMetadata().catch(() => {});
  }
}

/**
 * A deserializer that needs something before it can decode a batch (a Schema Registry format: the
 * schemas of ids it has not seen): `prepare(records)` answers undefined when it has everything, else
 * a promise the reader awaits before it emits the batch's first record.
 */
export interface PreparingDeserializer {
  prepare(records: readonly TopicRecord[]): Promise<void> | undefined;
}
