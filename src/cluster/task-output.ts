import type { MessageRecord } from '@platformatic/kafka';
import type { OpenTransaction, TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import type { TaskRecord, TaskTransaction } from '../core/connector/task-transaction.ts';
import { writeTaskOutput } from './task-checkpoint.ts';

/** Records sent to the brokers per Produce round. */
const SEND_CHUNK = 5000;
/** Records queued (not yet acknowledged) past which the task takes no more input: its back pressure. */
const HIGH_WATER = 20_000;

/** The records of one transaction: sealed by its checkpoint's barrier, then committed. */
interface Segment {
  records: MessageRecord[];
  /** The checkpoint whose barrier ended it; undefined while records still join it. */
  checkpointId: number | undefined;
  sent: PromiseWithResolvers<void>;
}

/**
 * Everything a task writes (exchange frames, its sinks' records), into its one open Kafka
 * transaction: sent in chunks while the task runs, so a checkpoint's commit waits only for the
 * last of them. A checkpoint's barrier seals the transaction's records: what the task writes after
 * it waits, in memory, for the next transaction, which opens once the checkpoint's commit is done
 * ({@link committed}). Queued records past a high-water mark make the task unavailable for
 * input, as a channel without credit does.
 */
export class TaskOutput implements TaskTransaction {
  readonly bootstrap: string;
  readonly #driver: TransactionDriver;
  #transaction: OpenTransaction;
  readonly #segments: Segment[] = [TaskOutput.#segment()];
  readonly #onAvailable: () => void;
  readonly #onFailure: (error: unknown) => void;
  /** Called at each seal, before it: the exchange writers add their watermark frames. */
  readonly #beforeSeal: (() => void)[] = [];
  #queued = 0;
  #pumping = false;
  #failure: unknown;
  /** Records written since the last seal (a checkpoint with none and no new input may be skipped). */
  written = 0;

  constructor(
    driver: TransactionDriver,
    transaction: OpenTransaction,
    bootstrap: string,
    events: { onAvailable: () => void; onFailure: (error: unknown) => void },
  ) {
    this.#driver = driver;
    this.#transaction = transaction;
    this.bootstrap = bootstrap;
    this.#onAvailable = events.onAvailable;
    this.#onFailure = events.onFailure;
  }

  static #segment(): Segment {
    const sent = Promise.withResolvers<void>();
    sent.promise.catch(() => {}); // a failed send is reported through onFailure
    return { records: [], checkpointId: undefined, sent };
  }

  get transaction(): OpenTransaction {
    return this.#transaction;
  }

  get available(): boolean {
    return this.#queued < HIGH_WATER && this.#failure === undefined;
  }

  onSeal(hook: () => void): void {
    this.#beforeSeal.push(hook);
  }

  write(records: TaskRecord[]): void {
    if (records.length === 0) return;
    const open = this.#segments.at(-1) as Segment;
    for (const record of records) open.records.push(record as MessageRecord);
    this.#queued += records.length;
    this.written += records.length;
    this.#pump();
  }

  /** The barrier of checkpoint `checkpointId` passed: the open transaction takes no more records. */
  seal(checkpointId: number): void {
    const open = this.#segments.at(-1) as Segment;
    if (this.#segments.some((segment) => segment.checkpointId === checkpointId)) return;
    for (const hook of this.#beforeSeal) hook();
    open.checkpointId = checkpointId;
    this.#segments.push(TaskOutput.#segment());
    this.written = 0;
    this.#pump();
  }

  /** Resolves once every record of checkpoint `checkpointId`'s transaction is acknowledged; rejects if a send failed. */
  async sealedSent(checkpointId: number): Promise<OpenTransaction> {
    const segment = this.#segments.find((entry) => entry.checkpointId === checkpointId);
    if (segment === undefined) throw new Error(`checkpoint ${checkpointId} sealed no transaction`);
    await segment.sent.promise;
    return this.#transaction;
  }

  /** The sealed transaction committed: the next one takes over (same producer id and epoch) with the records that waited. */
  committed(next: OpenTransaction): void {
    this.#segments.shift();
    this.#transaction = next;
    this.#pump();
  }

  #pump(): void {
    if (this.#pumping || this.#failure !== undefined) return;
    this.#pumping = true;
    void this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      for (;;) {
        const head = this.#segments[0] as Segment;
        if (head.records.length > 0) {
          const chunk = head.records.splice(0, SEND_CHUNK);
          await writeTaskOutput(this.#driver, this.#transaction, chunk);
          const wasUnavailable = !this.available;
          this.#queued -= chunk.length;
          if (wasUnavailable && this.available) this.#onAvailable();
          continue;
        }
        if (head.checkpointId !== undefined) head.sent.resolve(); // sealed and all sent: waits for committed()
        this.#pumping = false; // synchronously with the check above: a write after it pumps again
        return;
      }
    } catch (error) {
      this.#pumping = false;
      this.#failure = error;
      for (const segment of this.#segments) segment.sent.reject(error);
      this.#onFailure(error);
    }
  }
}
