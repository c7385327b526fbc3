import { setTimeout as sleep } from 'node:timers/promises';
import type { MessageRecord } from '@platformatic/kafka';
import { kafkaErrorIds, RETRIABLE_TRANSACTION_ERRORS } from './kafka-error-ids.ts';
import type { NumericMap } from './kafka-protocol.ts';
import { BATCH_BYTES_LIMIT, RecordAccumulator } from './record-accumulator.ts';
import type { BatchProducer, EncodedBatch } from './record-batch-builder.ts';

/**
 * The most produce requests of one transaction carrying a partition sent since the oldest such one
 * not acknowledged, that one included; also the most requests in flight in all. A broker keeps the
 * last five batches of each producer and partition to recognize a retried one (Kafka's
 * max.in.flight.requests.per.connection limit under idempotence): a retry after a lost answer with
 * more batches of its partition written after it is refused (OUT_OF_ORDER_SEQUENCE_NUMBER) instead
 * of recognized.
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
 * Java producer's in-flight batches), kept within the broker's window of duplicates. A broker
 * keeps the last five batches of each producer and partition: a retried batch among them is
 * answered with its first append (a duplicate, a success), one older than them is refused
 * (OUT_OF_ORDER_SEQUENCE_NUMBER, for good). So a partition's next batch goes out only while fewer
 * than {@link MAX_PRODUCE_IN_FLIGHT} requests carrying the partition were sent since its oldest
 * one not acknowledged, that one included: whatever answer is lost, at most four later batches of
 * the partition are ahead of the batch retried. (Counting only the requests in flight is not
 * enough: while the oldest waits for its answer, the ones after it are acknowledged and newer ones
 * go out past the window.) At most {@link MAX_PRODUCE_IN_FLIGHT} requests are in flight in all
 * (the Java producer's max.in.flight.requests.per.connection), which bounds the bytes they hold.
 *
 * Each request carries its partitions' sequence numbers, so the broker appends a partition's
 * batches in order or refuses the out-of-order one. A request that fails is retried only after
 * every request sent before it has completed, and while it waits for or runs its retry, its
 * partitions are muted: no new batch of theirs goes out (as the Java producer mutes a partition
 * whose batch is retried), while the other partitions' batches keep going out. The retries resend
 * the failed requests in sequence order, one at a time, and one refused as out of order (because
 * one before it was lost) succeeds once that one is in. An answer of DUPLICATE_SEQUENCE_NUMBER
 * alone means the broker has the batches: a success. The first failure no retry cures fails the
 * pipeline: every later send and {@link flush} throws it, and the transaction can only be aborted.
 *
 * The held batches of a muted or full partition stay held ({@link takeHeld} passes over them),
 * so a request carries only partitions with room.
 */
export class ProducePipeline {
  readonly #limit: number;
  /** Records written and not sent yet, encoded, waiting to go out together in the next request. */
  readonly #held = new RecordAccumulator();
  /** Settles once every request so far has completed or failed for good. */
  #tail: Promise<void> = Promise.resolve();
  #failure: { error: unknown } | undefined;
  /** The requests sent and not completed (acknowledged or failed for good). */
  #inFlight = 0;
  /** The requests whose attempt failed and whose retry has not completed. */
  #retrying = 0;
  /** Per partition ("topic:partition"): its window of requests and whether it is muted. */
  readonly #partitions = new Map<string, PartitionWindow>();
  /** Whether a partition may have another batch sent now (not muted, its window not full). */
  readonly #ready = (partition: string): boolean => {
    const window = this.#partitions.get(partition);
    return window === undefined || (window.retrying === 0 && window.requests.length < this.#limit);
  };
  /** Wakes those waiting in {@link reserve} or {@link waitForChange} when a request completes or fails. */
  #wake: (() => void) | undefined;
  #changed: Promise<void> | undefined;

  constructor(limit = MAX_PRODUCE_IN_FLIGHT) {
    this.#limit = limit;
  }

  /**
   * Whether a request carrying these partitions may be sent now: fewer than the limit are in
   * flight, and none of the partitions is muted or has the limit of requests sent since its
   * oldest one not acknowledged (the broker's window of duplicates).
   */
  canSend(partitions: readonly string[]): boolean {
    if (this.#inFlight >= this.#limit) return false;
    for (const partition of partitions) if (!this.#ready(partition)) return false;
    return true;
  }

  /** The requests sent and not completed. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** A partition's requests, from its oldest not acknowledged to its newest (at most the limit). */
  windowOf(partition: string): number {
    return this.#partitions.get(partition)?.requests.length ?? 0;
  }

  /** Whether any failed request waits for or runs its retry. */
  get muted(): boolean {
    return this.#retrying > 0;
  }

  /** Whether a failed request carrying this partition waits for or runs its retry (no new batch of it goes out meanwhile). */
  isMuted(partition: string): boolean {
    return (this.#partitions.get(partition)?.retrying ?? 0) > 0;
  }

  /**
   * Whether the records held should go out now: when {@link COALESCE_BYTES} are held, a request
   * may go out, and a partition held has room; and when a request's worth (BATCH_BYTES_LIMIT) is
   * held, even if that means waiting for room ({@link waitForChange}), so what is held stays
   * bounded. Otherwise they wait for a later write or the flush.
   */
  get shouldSendHeld(): boolean {
    const held = this.#held.bytes;
    if (held === 0) return false;
    if (held >= BATCH_BYTES_LIMIT) return true;
    return held >= COALESCE_BYTES && this.#inFlight < this.#limit && this.#held.hasReady(this.#ready);
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
   * Takes the oldest batches held of the partitions that may send now, up to about `maxBytes` (at
   * least one), sealed for `producer` with their partitions' next sequences (moved past them); none
   * when none are held or every partition held waits (muted, or its window full): then
   * {@link waitForChange}. The batches taken must be sent ({@link send}) before the next take.
   */
  takeHeld(maxBytes: number, producer: BatchProducer, sequences?: NumericMap): EncodedBatch[] {
    return this.#held.take(maxBytes, producer, sequences, this.#ready);
  }

  /** Waits until a request carrying these partitions may be sent ({@link canSend}); throws the pipeline's failure, if it has one. */
  async reserve(partitions: readonly string[]): Promise<void> {
    this.throwIfFailed();
    while (!this.canSend(partitions)) await this.waitForChange();
  }

  /** Waits until a request completes, fails or ends its retry; throws the pipeline's failure, if it has one. */
  async waitForChange(): Promise<void> {
    this.throwIfFailed();
    this.#changed ??= new Promise<void>((resolve) => {
      this.#wake = resolve;
    });
    await this.#changed;
    this.throwIfFailed();
  }

  /**
   * Sends a request carrying a batch of each of `partitions` ("topic:partition") now (`attempt`),
   * without waiting for its answer; the caller has waited in {@link reserve}. When it fails,
   * `retry` runs once the requests before it have completed (the caller's retry loop: backoff,
   * routes forgotten, a deadline, starting with a new attempt), and no other batch of its
   * partitions goes out until it has completed.
   */
  send(partitions: readonly string[], attempt: () => Promise<unknown>, retry: () => Promise<unknown>): void {
    const request: SentRequest = { done: false };
    const windows: PartitionWindow[] = [];
    for (const partition of partitions) {
      let window = this.#partitions.get(partition);
      if (window === undefined) {
        window = { requests: [], retrying: 0 };
        this.#partitions.set(partition, window);
      }
      window.requests.push(request);
      windows.push(window);
    }
    this.#inFlight++;
    const before = this.#tail;
    const completed = attempt().then(
      () => {},
      async (error: unknown) => {
        if (isDuplicate(error)) return; // the broker has these batches already
        this.#mute(windows, 1);
        try {
          await before;
          this.throwIfFailed(); // one before it failed for good: the transaction is lost anyway
          await retryUntilDone(retry);
        } finally {
          this.#mute(windows, -1);
        }
      },
    );
    const settled = completed.then(
      () => this.#complete(request, windows),
      (error: unknown) => {
        this.#failure ??= { error };
        this.#complete(request, windows);
      },
    );
    this.#tail = Promise.all([before, settled]).then(() => {});
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

  #mute(windows: readonly PartitionWindow[], by: 1 | -1): void {
    this.#retrying += by;
    for (const window of windows) window.retrying += by;
  }

  /** A request is acknowledged (or failed for good): each of its partitions' windows moves past its oldest requests completed. */
  #complete(request: SentRequest, windows: readonly PartitionWindow[]): void {
    request.done = true;
    this.#inFlight--;
    for (const window of windows) {
      let passed = 0;
      while (passed < window.requests.length && (window.requests[passed] as SentRequest).done) passed++;
      if (passed > 0) window.requests.splice(0, passed);
    }
    const wake = this.#wake;
    this.#wake = undefined;
    this.#changed = undefined;
    wake?.();
  }
}

/** A request sent, until it is acknowledged or fails for good. */
interface SentRequest {
  done: boolean;
}

/** A partition's requests from its oldest one not completed to its newest, and how many of them wait for or run a retry. */
interface PartitionWindow {
  requests: SentRequest[];
  retrying: number;
}

/**
 * Runs the caller's retry loop until the request is done. Two answers end the caller's loop, which
 * knows only the retriable errors, and are sent again a few times (backing off) before the request
 * fails for good:
 * - DUPLICATE_SEQUENCE_NUMBER (those batches are in) mixed with retriable errors for other partitions;
 * - OUT_OF_ORDER_SEQUENCE_NUMBER, although every request before this one completed: the broker did
 *   not append the batch (a refused batch is never appended, so sending the same batch again cannot
 *   duplicate it). Seen once, in a CI run, on a retry right after a connection cut, its cause not
 *   pinned down (the suspects: the cut connection's requests the broker still handles beside the
 *   retries, or its transaction verification state). A broker that lost batches for good (an
 *   unclean leader election) answers it every time: the pipeline then fails, as before.
 */
async function retryUntilDone(retry: () => Promise<unknown>): Promise<void> {
  for (let round = 1; ; round++) {
    try {
      await retry();
      return;
    } catch (error) {
      if (isDuplicate(error)) return;
      const ids = kafkaErrorIds(error);
      const again =
        (ids.includes(DUPLICATE) || ids.includes(OUT_OF_ORDER)) &&
        ids.every((id) => id === DUPLICATE || id === OUT_OF_ORDER || RETRIABLE_TRANSACTION_ERRORS.includes(id));
      if (!again || round >= RETRY_AGAIN_ROUNDS) throw error;
      await sleep(100 * round);
    }
  }
}

const DUPLICATE = 'DUPLICATE_SEQUENCE_NUMBER';
const OUT_OF_ORDER = 'OUT_OF_ORDER_SEQUENCE_NUMBER';
/** How many times the caller's loop runs for such an answer: backing off 100 ms more each time, about 5 s in all. */
const RETRY_AGAIN_ROUNDS = 10;

/**
 * Whether a produce request's answer says only that the broker already has its batches
 * (DUPLICATE_SEQUENCE_NUMBER for every partition that is not a success): the request is done.
 * Brokers since Kafka 2 answer such a retry with the first append's offsets and no error; older
 * ones answered DUPLICATE_SEQUENCE_NUMBER.
 */
export function isDuplicate(error: unknown): boolean {
  const ids = kafkaErrorIds(error);
  return ids.length > 0 && ids.every((id) => id === DUPLICATE);
}
