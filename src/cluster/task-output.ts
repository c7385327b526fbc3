import type { MessageRecord } from '@platformatic/kafka';
import type { OpenTransaction, TransactionDriver } from '../connectors/kafka/transaction-driver.ts';
import type { TaskRecord, TaskTransaction } from '../core/connector/task-transaction.ts';
import { writeTaskOutput } from './task-checkpoint.ts';
import { openTransactionBudgetMs, uploadTooSlow } from './task-transaction-timeout.ts';

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
 *
 * A transaction stays open from its first record through its checkpoint's snapshot and the
 * upload of the state files to the checkpoint storage (it is sealed between the two); the broker
 * aborts it once it has been open for the transaction timeout, and then answers the task as if it
 * were fenced. So the output bounds that: a transaction whose checkpoint has not reached its commit
 * ({@link sealedSent}: snapshot and upload done) when it has been open for
 * {@link openTransactionBudgetMs} fails the task with TASK_TRANSACTION_TIMED_OUT, saying why, and
 * the task aborts the transaction itself and starts again from its latest checkpoint.
 */
export class TaskOutput implements TaskTransaction {
  readonly bootstrap: string;
  readonly #driver: TransactionDriver;
  #transaction: OpenTransaction;
  readonly #segments: Segment[] = [TaskOutput.#segment()];
  readonly #onAvailable: () => void;
  readonly #onFailure: (error: unknown) => void;
  /** Called at each seal, before it: the exchange writers add their watermark frames (and a savepoint's barrier frame). */
  readonly #beforeSeal: ((checkpointId: number) => void)[] = [];
  /** Whether a seal hook has something new to write (an exchange writer's watermark moved). */
  readonly #changed: (() => boolean)[] = [];
  #queued = 0;
  #pumping = false;
  #failure: unknown;
  /** When the open transaction's first records went out (the broker's transaction timer starts there); undefined while it has none. */
  #openedAt: number | undefined;
  /** The open transaction's checkpoint reached its commit: its state is written. */
  #committing = false;
  /** Fails the task should the sealed transaction's checkpoint not reach its commit in time. */
  #bound: NodeJS.Timeout | undefined;
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

  onSeal(hook: (checkpointId: number) => void, changed?: () => boolean): void {
    this.#beforeSeal.push(hook);
    if (changed !== undefined) this.#changed.push(changed);
  }

  /** Nothing written since the last seal, and no seal hook has anything new to write: a checkpoint now would carry no change. */
  get quiet(): boolean {
    return this.written === 0 && !this.#changed.some((changed) => changed());
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
    for (const hook of this.#beforeSeal) hook(checkpointId);
    open.checkpointId = checkpointId;
    this.#segments.push(TaskOutput.#segment());
    this.written = 0;
    this.#pump();
  }

  /** Resolves once every record of checkpoint `checkpointId`'s transaction is acknowledged; rejects if a send failed. */
  async sealedSent(checkpointId: number): Promise<OpenTransaction> {
    const segment = this.#segments.find((entry) => entry.checkpointId === checkpointId);
    if (segment === undefined) throw new Error(`checkpoint ${checkpointId} sealed no transaction`);
    if (this.#failure !== undefined) throw this.#failure; // failed (a send, or the bound): the checkpoint cannot commit
    if (segment === this.#segments[0]) {
      this.#committing = true; // its state is written: what is left is the commit
      clearTimeout(this.#bound);
    }
    await segment.sent.promise;
    return this.#transaction;
  }

  /** The sealed transaction committed: the next one takes over (same producer id and epoch) with the records that waited. */
  committed(next: OpenTransaction): void {
    this.#segments.shift();
    this.#transaction = next;
    clearTimeout(this.#bound);
    this.#bound = undefined;
    this.#openedAt = undefined;
    this.#committing = false;
    this.#armBound();
    this.#pump();
  }

  /** Once the open transaction has sent records: fails the task at its budget unless its checkpoint has reached the commit by then. */
  #armBound(): void {
    const timeoutMs = this.#driver.transactionTimeoutMs;
    const head = this.#segments[0] as Segment;
    if (this.#bound !== undefined || this.#committing || this.#openedAt === undefined || !Number.isFinite(timeoutMs)) return;
    const openedAt = this.#openedAt;
    this.#bound = setTimeout(
      () => {
        if (this.#committing || this.#failure !== undefined || this.#segments[0] !== head) return;
        // Due long ago (the process was paused, or its event loop held): past the timeout the broker
        // aborts the transaction itself; its next request is answered "fenced", and the member tells
        // that timeout apart (transaction-timed-out.ts), naming it. A commit that gets in first is fine.
        if (Date.now() - openedAt >= timeoutMs) return;
        this.#fail(uploadTooSlow(`task "${this.#transaction.transactionalId}"`, head.checkpointId, Date.now() - openedAt, timeoutMs));
      },
      Math.max(0, openedAt + openTransactionBudgetMs(timeoutMs) - Date.now()),
    );
    this.#bound.unref();
  }

  #fail(error: unknown): void {
    this.#failure = error;
    clearTimeout(this.#bound);
    for (const segment of this.#segments) segment.sent.reject(error);
    this.#onFailure(error);
  }

  #pump(): void {
    if (this.#pumping || this.#failure !== undefined) return;
    this.#pumping = true;
    void this.#drain();
  }

  async #drain(): Promise<void> {
    try {
      for (;;) {
        if (this.#failure !== undefined) {
          this.#pumping = false; // failed meanwhile (the bound): nothing more goes into the transaction
          return;
        }
        const head = this.#segments[0] as Segment;
        if (head.records.length > 0) {
          const chunk = head.records.splice(0, SEND_CHUNK);
          if (this.#openedAt === undefined) {
            this.#openedAt = Date.now();
            this.#armBound();
          }
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
      if (this.#failure === undefined) this.#fail(error);
    }
  }
}
