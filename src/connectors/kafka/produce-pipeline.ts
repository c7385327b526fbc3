import type { MessageRecord } from '@platformatic/kafka';
import { NumericMap } from './kafka-protocol.ts';
import { BATCH_BYTES_LIMIT, estimatedRecordSize } from './record-chunks.ts';

/**
 * The most produce requests of one transaction in flight at once. A broker keeps the last five
 * batches of each producer and partition to recognize a retried one (Kafka's
 * max.in.flight.requests.per.connection limit under idempotence), so more would make a retry after
 * a lost answer land twice.
 */
export const MAX_PRODUCE_IN_FLIGHT = 5;

/**
 * While a request of the transaction is in flight, records gather until about this many bytes
 * (estimated) are held before another request goes out (Nagle's rule, in place of the Java
 * producer's linger.ms): a busy sink sends a few large requests instead of one per batch, which
 * costs the broker and the task far less, and an idle one sends each batch at once.
 */
export const COALESCE_BYTES = 256 * 1024;

/**
 * The produce requests of one open transaction that were sent and not acknowledged yet (the
 * Java producer's in-flight batches). Requests are sent at once, up to
 * {@link MAX_PRODUCE_IN_FLIGHT}; each carries its partitions' sequence numbers, so the broker
 * appends a partition's batches in order or refuses the out-of-order one. A request that fails is
 * retried only after every request sent before it has completed: a retried batch goes in after
 * the batches ahead of it, and a request refused as out of order (because one before it was lost)
 * succeeds once that one is in. The first failure no retry cures fails the pipeline: every later
 * send and {@link flush} throws it, and the transaction can only be aborted.
 */
export class ProducePipeline {
  readonly #limit: number;
  readonly #inFlight = new Set<Promise<void>>();
  /** Records written while the pipeline was full, waiting to go out together in the next request. */
  #held: MessageRecord[] = [];
  #heldBytes = 0;
  /** Settles once every request so far has completed or failed for good. */
  #tail: Promise<void> = Promise.resolve();
  #failure: { error: unknown } | undefined;

  constructor(limit = MAX_PRODUCE_IN_FLIGHT) {
    this.#limit = limit;
  }

  /** Whether another request may be sent now. */
  get hasRoom(): boolean {
    return this.#inFlight.size < this.#limit;
  }

  /**
   * Whether the records held should go out now: when no request is in flight, when
   * {@link COALESCE_BYTES} are held and there is room, and when a request's worth
   * (BATCH_BYTES_LIMIT) is held, even if that means waiting for room ({@link reserve}), so what
   * is held stays bounded. Otherwise they wait for a later write or the flush.
   */
  get shouldSendHeld(): boolean {
    if (this.#heldBytes === 0) return false;
    if (this.#inFlight.size === 0 || this.#heldBytes >= BATCH_BYTES_LIMIT) return true;
    return this.#heldBytes >= COALESCE_BYTES && this.hasRoom;
  }

  /** Keeps records to send later (in order, after those held before). */
  hold(records: readonly MessageRecord[]): void {
    for (const record of records) {
      this.#held.push(record);
      this.#heldBytes += estimatedRecordSize(record);
    }
  }

  /** The bytes (estimated) of the records held. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** Takes the records held, in order, up to about `maxBytes` (at least one record); none when none are held. */
  takeHeld(maxBytes: number): MessageRecord[] {
    let bytes = 0;
    let count = 0;
    while (count < this.#held.length) {
      const size = estimatedRecordSize(this.#held[count] as MessageRecord);
      if (count > 0 && bytes + size > maxBytes) break;
      bytes += size;
      count++;
    }
    const taken = count === this.#held.length ? this.#held : this.#held.slice(0, count);
    this.#held = count === this.#held.length ? [] : this.#held.slice(count);
    this.#heldBytes -= bytes;
    return taken;
  }

  /** Waits until another request may be sent; throws the pipeline's failure, if it has one. */
  async reserve(): Promise<void> {
    this.throwIfFailed();
    while (this.#inFlight.size >= this.#limit) await Promise.race(this.#inFlight);
    this.throwIfFailed();
  }

  /**
   * Sends a request now (`attempt`), without waiting for its answer. When it fails, `retry` runs
   * once the requests before it have completed: the caller's retry loop (backoff, routes forgotten,
   * a deadline), starting with a new attempt.
   */
  send(attempt: () => Promise<unknown>, retry: () => Promise<unknown>): void {
    const before = this.#tail;
    const completed = attempt().then(
      () => {},
      async () => {
        await before;
        this.throwIfFailed(); // one before it failed for good: the transaction is lost anyway
        await retry();
      },
    );
    const settled = completed.then(
      () => {},
      (error: unknown) => {
        this.#failure ??= { error };
      },
    );
    this.#tail = Promise.all([before, settled]).then(() => {});
    this.#inFlight.add(settled);
    void settled.then(() => this.#inFlight.delete(settled));
  }

  /** Waits until every request sent has been acknowledged; throws the first failure no retry cured. */
  async flush(): Promise<void> {
    await this.#tail;
    this.throwIfFailed();
  }

  /** Waits until every request sent has completed or failed, whatever the outcome (before an abort). */
  async settle(): Promise<void> {
    await this.#tail;
  }

  throwIfFailed(): void {
    if (this.#failure !== undefined) throw this.#failure.error;
  }
}

/**
 * The next sequence number of each partition of `records`, for one produce request, and moves the
 * transaction's sequences past them: the request reads its own copy when it is encoded, later.
 */
export function takeSequences(sequences: NumericMap, records: readonly MessageRecord[]): NumericMap {
  const counts = new Map<string, Map<number, number>>();
  for (const record of records) {
    let partitions = counts.get(record.topic);
    if (partitions === undefined) {
      partitions = new Map();
      counts.set(record.topic, partitions);
    }
    const partition = record.partition as number;
    partitions.set(partition, (partitions.get(partition) ?? 0) + 1);
  }
  const taken = new NumericMap();
  for (const [topic, partitions] of counts) {
    for (const [partition, count] of partitions) {
      const key = `${topic}:${partition}`;
      taken.set(key, sequences.postIncrement(key, count, 0));
    }
  }
  return taken;
}
