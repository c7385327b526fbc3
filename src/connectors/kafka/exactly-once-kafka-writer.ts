import type { MessageRecord } from '@platformatic/kafka';
import type { DeadLetterRecord } from '../../core/functions/dead-letter.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import type { RecoveryContext, TwoPhaseCommitLogic } from '../two-phase-commit-sink.ts';
import type { ClusterConnections } from './cluster-connections.ts';
import { deadLetterToKafka } from './dead-letter-to-kafka.ts';
import { KafkaRecordSerializer } from './kafka-record-serializer.ts';
import { DEFAULT_RETRY_TIMEOUT_MS, type KafkaSinkOptions } from './kafka-sink-options.ts';
import { sinkConnections } from './sink-connections.ts';
import { committableOf, type KafkaCommittable, type OpenTransaction, TransactionDriver } from './transaction-driver.ts';
import { defaultTransactionalIdPrefix, parseTransactionalId, transactionalId } from './transactional-id.ts';

/** A transaction of the sink: the slot of its transactional id, and the Kafka transaction once a record was written. */
export interface KafkaTransaction {
  slot: number;
  open: OpenTransaction | undefined;
}

type SlotState = { state: 'free' } | { state: 'in-use' } | { state: 'cooling'; snapshotAfterCommit: number | undefined };

/**
 * The Kafka sink's two-phase-commit logic for `exactly-once` (run by TwoPhaseCommitSinkOperator):
 * one Kafka transaction per subtask per checkpoint, pre-committed on the barrier, committed when
 * the checkpoint completes.
 *
 * Transactional ids come from a small pool per subtask: `<prefix>-<subtask>-<slot>`
 * (transactional-id.ts). A slot goes back to the pool only once its transaction is committed AND a
 * checkpoint taken after that commit has completed, so no checkpoint that could still be restored
 * lists a reused id, and a fenced answer to a re-commit always means the data is gone. The pool
 * holds about maxConcurrent + 2 ids.
 */
export class ExactlyOnceKafkaWriter<T> implements TwoPhaseCommitLogic<T, KafkaTransaction, KafkaCommittable> {
  readonly #options: KafkaSinkOptions<T>;
  readonly #transactionTimeoutMs: number;
  readonly #retryTimeoutMs: number;
  #connections!: ClusterConnections;
  #driver!: TransactionDriver;
  #serializer!: KafkaRecordSerializer<T>;
  #prefix = '';
  #subtaskIndex = 0;
  readonly #slots: SlotState[] = [];
  /** When each open transaction (being written, or pre-committed and waiting for its commit) began, by transactional id. */
  readonly #openSince = new Map<string, number>();

  constructor(options: KafkaSinkOptions<T>, transactionTimeoutMs: number, retryTimeoutMs = DEFAULT_RETRY_TIMEOUT_MS) {
    this.#options = options;
    this.#transactionTimeoutMs = transactionTimeoutMs;
    this.#retryTimeoutMs = retryTimeoutMs;
  }

  open(context: OperatorContext): void {
    this.#connections = sinkConnections(this.#options, context, this.#retryTimeoutMs);
    this.#driver = new TransactionDriver(this.#connections, { transactionTimeoutMs: this.#transactionTimeoutMs, retryTimeoutMs: this.#retryTimeoutMs });
    this.#serializer = new KafkaRecordSerializer(this.#options, this.#connections);
    this.#prefix = this.#options.transactionalIdPrefix ?? defaultTransactionalIdPrefix(context.jobName, context.uid);
    this.#subtaskIndex = context.subtaskIndex;
    // How close data loss is: the oldest open transaction's age against the timeout the broker
    // aborts it at, per subtask (a maximum, not a sum, is what tells).
    context.metrics.gauge(`transactionAge/${context.subtaskIndex}/oldestMs`, () => {
      let oldest = Number.POSITIVE_INFINITY;
      for (const since of this.#openSince.values()) oldest = Math.min(oldest, since);
      return Number.isFinite(oldest) ? Date.now() - oldest : 0;
    });
    context.metrics.gauge(`transactionAge/${context.subtaskIndex}/timeoutMs`, () => this.#transactionTimeoutMs);
  }

  beginTransaction(): KafkaTransaction {
    let slot = this.#slots.findIndex((entry) => entry.state === 'free');
    if (slot < 0) slot = this.#slots.push({ state: 'free' }) - 1;
    this.#slots[slot] = { state: 'in-use' };
    return { slot, open: undefined }; // InitProducerId waits for the first record: empty transactions cost nothing
  }

  async write(transaction: KafkaTransaction, batch: T[]): Promise<void> {
    await this.#send(transaction, await this.#serializer.serialize(batch));
  }

  /** Dead letters of the job's sources and operators, into the same transaction as the output (each to its own topic). */
  async writeDeadLetters(transaction: KafkaTransaction, letters: DeadLetterRecord[]): Promise<void> {
    await this.#send(transaction, await this.#serializer.serializeWith(letters, deadLetterToKafka));
  }

  async #send(transaction: KafkaTransaction, messages: MessageRecord[]): Promise<void> {
    if (transaction.open === undefined) {
      transaction.open = await this.#driver.initTransaction(transactionalId(this.#prefix, this.#subtaskIndex, transaction.slot));
      this.#openSince.set(transaction.open.transactionalId, Date.now());
    }
    // Returns once the produce requests are sent: up to MAX_PRODUCE_IN_FLIGHT are in flight while
    // the task goes on with its next batches; the barrier waits for their acknowledgements.
    await this.#driver.sendPipelined(transaction.open, messages);
  }

  async preCommit(transaction: KafkaTransaction, checkpointId: number): Promise<KafkaCommittable | null> {
    // Slots committed before this snapshot are free once this checkpoint completes.
    for (const slot of this.#slots) if (slot.state === 'cooling' && slot.snapshotAfterCommit === undefined) slot.snapshotAfterCommit = checkpointId;
    // Every produce request of the transaction acknowledged (AddPartitionsToTxn was, before its records went out).
    if (transaction.open !== undefined) await this.#driver.flush(transaction.open);
    if (transaction.open === undefined || transaction.open.records === 0) {
      this.#slots[transaction.slot] = { state: 'free' };
      return null; // never checkpoint an empty transaction
    }
    return committableOf(transaction.open);
  }

  async commit(committable: KafkaCommittable): Promise<void> {
    await this.#driver.commit(committable);
    this.#openSince.delete(committable.transactionalId);
    const slot = this.#ownSlot(committable.transactionalId);
    if (slot !== undefined) this.#setSlot(slot, { state: 'cooling', snapshotAfterCommit: undefined });
  }

  notifyCheckpointComplete(checkpointId: number): void {
    for (let i = 0; i < this.#slots.length; i++) {
      const slot = this.#slots[i] as SlotState;
      if (slot.state === 'cooling' && slot.snapshotAfterCommit !== undefined && slot.snapshotAfterCommit <= checkpointId) this.#slots[i] = { state: 'free' };
    }
  }

  async abort(transaction: KafkaTransaction): Promise<void> {
    if (transaction.open === undefined) return;
    await this.#driver.abort(transaction.open);
    this.#openSince.delete(transaction.open.transactionalId);
  }

  isEmpty(transaction: KafkaTransaction): boolean {
    return transaction.open === undefined || transaction.open.records === 0;
  }

  async close(): Promise<void> {
    await this.#connections?.close().catch(() => {});
  }

  async abortLingering(context: RecoveryContext<KafkaCommittable>): Promise<number> {
    // The ids the restored checkpoint holds were just committed again: keep them out of use until a
    // checkpoint taken after that commit completes. Every other open transaction of this sink's
    // ids that this subtask is responsible for (old subtask s with s % parallelism === this one)
    // is a crashed run's lingering transaction: fence it, which aborts it. Ids of other sinks whose
    // prefix merely starts with this one are not this sink's (parseTransactionalId).
    const held = new Set(context.allRestoredCommittables.map((committable) => committable.transactionalId));
    for (const id of held) {
      const slot = this.#ownSlot(id);
      if (slot !== undefined) this.#setSlot(slot, { state: 'cooling', snapshotAfterCommit: undefined });
    }
    let aborted = 0;
    for (const id of await this.#driver.listOpenTransactions(this.#prefix)) {
      const parts = parseTransactionalId(this.#prefix, id);
      if (parts === undefined || parts.subtask % context.parallelism !== context.subtaskIndex || held.has(id)) continue;
      await this.#driver.abortLingering(id);
      aborted++;
    }
    return aborted;
  }

  #setSlot(slot: number, state: SlotState): void {
    while (this.#slots.length <= slot) this.#slots.push({ state: 'free' });
    this.#slots[slot] = state;
  }

  /** The slot of one of this subtask's transactional ids; undefined for any other id. */
  #ownSlot(id: string): number | undefined {
    const parts = parseTransactionalId(this.#prefix, id);
    return parts !== undefined && parts.subtask === this.#subtaskIndex ? parts.slot : undefined;
  }
}
