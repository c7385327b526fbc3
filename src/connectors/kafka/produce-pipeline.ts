import type { MessageRecord } from '@platformatic/kafka';
import type { NumericMap } from './kafka-protocol.ts';
import { BATCH_BYTES_LIMIT, RecordAccumulator } from './record-accumulator.ts';
import type { BatchProducer, EncodedBatch } from './record-batch-builder.ts';

/**
 * The most produce requests of one transaction in flight at once. A broker keeps the last five
 * batches of each producer and partition to recognize a retried one (Kafka's
 * max.in.flight.requests.per.connection limit under idempotence), so more would make a retry after
 * a lost answer land twice.
 */
export const MAX_PRODUCE_IN_FLIGHT = 5;

/**
 * Records gather until this many bytes (encoded) are held before a request goes out, whether or
 * not one is in flight (the Java producer's batch.size, with the pre-commit's flush in place of
 * linger.ms): a sink sends a few large requests instead of one per operator batch, which costs the
 * broker and the task far less. Holding costs no visibility, since a transaction's records are
 * read only once it commits, and what is held at the barrier goes out in the flush. (Sending at
 * once whenever nothing was in flight gave about four times as many requests against a local
 * broker, whose answers come back before the next batch: docs/benchmarks.md.)
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
  /** Records written and not sent yet, encoded, waiting to go out together in the next request. */
  readonly #held = new RecordAccumulator();
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
   * Whether the records held should go out now: when {@link COALESCE_BYTES} are held and there
   * is room, and when a request's worth (BATCH_BYTES_LIMIT) is held, even if that means waiting
   * for room ({@link reserve}), so what is held stays bounded. Otherwise they wait for a later
   * write or the flush.
   */
  get shouldSendHeld(): boolean {
    const held = this.#held.bytes;
    if (held === 0) return false;
    if (held >= BATCH_BYTES_LIMIT) return true;
    return held >= COALESCE_BYTES && this.hasRoom;
  }

  /** Keeps records to send later (in order, after those held before), encoded into their partitions' batches at once. */
  hold(records: readonly MessageRecord[], now = Date.now()): void {
    this.#held.append(records, now);
  }

  /** The bytes of the batches held. */
  get heldBytes(): number {
    return this.#held.bytes;
  }

  /**
   * Takes the oldest batches held, up to about `maxBytes` (at least one), sealed for `producer`
   * with their partitions' next sequences (moved past them); none when none are held.
   */
  takeHeld(maxBytes: number, producer: BatchProducer, sequences?: NumericMap): EncodedBatch[] {
    return this.#held.take(maxBytes, producer, sequences);
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
