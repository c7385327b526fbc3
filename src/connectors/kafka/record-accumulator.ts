import type { MessageRecord } from '@platformatic/kafka';
import type { NumericMap } from './kafka-protocol.ts';
import { type BatchProducer, type EncodedBatch, RecordBatchBuilder } from './record-batch-builder.ts';

/**
 * The most bytes of one partition's batch, so it stays below the brokers' default
 * max.message.bytes (1 MiB); a produce request carries about this much in all.
 */
export const BATCH_BYTES_LIMIT = 768 * 1024;

/**
 * The records written and not sent yet, already encoded (the Java producer's RecordAccumulator):
 * one open batch per partition that records append to, and the batches in the order they were
 * opened. A batch is closed once the next record would take it past BATCH_BYTES_LIMIT, and the
 * partition's next record opens another. {@link take} seals batches in that order, so each
 * partition's batches get their sequence numbers in the order of their records.
 */
export class RecordAccumulator {
  readonly #batchLimit: number;
  /** Every batch not taken yet, oldest first (open ones included). */
  #batches: RecordBatchBuilder[] = [];
  /** The open batch of each topic and partition. */
  readonly #open = new Map<string, (RecordBatchBuilder | undefined)[]>();
  #bytes = 0;

  constructor(batchLimit = BATCH_BYTES_LIMIT) {
    this.#batchLimit = batchLimit;
  }

  /** The bytes of the batches held, headers included: exactly what their requests will carry. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Encodes records (each with its topic and partition; a record without one goes to partition 0) into their partitions' open batches. A record without a timestamp gets `now`. */
  append(records: readonly MessageRecord[], now = Date.now()): void {
    let lastTopic: string | undefined;
    let open: (RecordBatchBuilder | undefined)[] = [];
    for (const record of records) {
      if (record.topic !== lastTopic) {
        lastTopic = record.topic;
        let known = this.#open.get(record.topic);
        if (known === undefined) {
          known = [];
          this.#open.set(record.topic, known);
        }
        open = known;
      }
      const partition = record.partition ?? 0;
      let builder = open[partition] ?? this.#openBatch(open, record.topic, partition);
      let before = builder.bytes;
      if (!builder.append(record, now, this.#batchLimit)) {
        builder = this.#openBatch(open, record.topic, partition);
        before = builder.bytes;
        builder.append(record, now);
      }
      this.#bytes += builder.bytes - before;
    }
  }

  /**
   * Seals and takes the oldest batches, up to `maxBytes` in all (at least one; none when none are
   * held) and one per partition, each with its partition's next sequence from `sequences`
   * ("topic:partition", moved past its records; -1 without). With `ready`, the batches of a
   * partition it refuses ("topic:partition") are passed over and stay, in their order, for a later
   * take (the Java producer's drain skipping a muted partition).
   */
  take(maxBytes: number, producer: BatchProducer, sequences?: NumericMap, ready?: (partition: string) => boolean): EncodedBatch[] {
    const taken: EncodedBatch[] = [];
    let bytes = 0;
    const seen = new Set<string>();
    /** The batches passed over (their partitions not ready): they stay. */
    const kept: RecordBatchBuilder[] = [];
    const passedOver = new Set<string>();
    let next = 0;
    for (; next < this.#batches.length; next++) {
      const builder = this.#batches[next] as RecordBatchBuilder;
      const key = `${builder.topic}:${builder.partition}`;
      if (ready !== undefined && (passedOver.has(key) || !ready(key))) {
        passedOver.add(key);
        kept.push(builder);
        continue;
      }
      if (taken.length > 0 && (bytes + builder.bytes > maxBytes || seen.has(key))) break;
      seen.add(key);
      const open = this.#open.get(builder.topic);
      if (open !== undefined && open[builder.partition] === builder) open[builder.partition] = undefined;
      taken.push(builder.seal(producer, sequences === undefined ? -1 : sequences.postIncrement(key, builder.count, 0)));
      bytes += builder.bytes;
    }
    const rest = next === this.#batches.length ? [] : this.#batches.slice(next);
    this.#batches = kept.length === 0 ? rest : kept.concat(rest);
    this.#bytes -= bytes;
    return taken;
  }

  /** Whether any batch held belongs to a partition `ready` accepts ("topic:partition"). */
  hasReady(ready: (partition: string) => boolean): boolean {
    for (const builder of this.#batches) if (ready(`${builder.topic}:${builder.partition}`)) return true;
    return false;
  }

  #openBatch(open: (RecordBatchBuilder | undefined)[], topic: string, partition: number): RecordBatchBuilder {
    const builder = new RecordBatchBuilder(topic, partition);
    open[partition] = builder;
    this.#batches.push(builder);
    this.#bytes += builder.bytes;
    return builder;
  }
}
