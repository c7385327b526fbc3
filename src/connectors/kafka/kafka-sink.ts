import type { MessageRecord } from '@platformatic/kafka';
import { murmur2 } from '@platformatic/kafka';
import type { Preflightable, PreflightContext, PreflightFinding } from '../../core/connector/preflight.ts';
import type { Sink } from '../../core/connector/sink.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import { StreamOperator } from '../../core/operator/stream-operator.ts';
import { type RecoveryContext, type TwoPhaseCommitLogic, TwoPhaseCommitSinkOperator } from '../two-phase-commit-sink.ts';
import { ClusterConnections } from './cluster-connections.ts';
import { resolveBootstrap } from './kafka-connection-options.ts';
import { brokerTransactionMaxTimeout, missingTopics, transactionTimeoutFindings, unreachableFinding } from './kafka-preflight.ts';
import { type KafkaSinkOptions, parseKafkaSinkOptions } from './kafka-sink-options.ts';
import { PlainProducer } from './plain-producer.ts';
import { committableOf, type KafkaCommittable, type OpenTransaction, TransactionDriver } from './transaction-driver.ts';
import { defaultTransactionalIdPrefix, parseTransactionalId, transactionalId } from './transactional-id.ts';

/**
 * Kafka sink (Flink's KafkaSink). In exactly-once mode, a two-phase-commit sink: one Kafka
 * transaction per subtask per checkpoint, pre-committed on the barrier (every AddPartitionsToTxn
 * and Produce acknowledged), its committable {transactionalId, producerId, epoch, protocol} in the
 * checkpoint, committed when the checkpoint completes, re-committed on restore. At-least-once
 * writes are acknowledged before each barrier passes; `none` sends and does not wait.
 *
 * Transactional ids come from a small pool per subtask: `<prefix>-<subtask>-<slot>` (transactional-id.ts). A slot goes
 * back to the pool only once its transaction is committed AND a checkpoint taken after that commit
 * has completed, so no checkpoint that could still be restored lists a reused id, and a fenced
 * answer to a re-commit always means the data is gone. The pool holds about maxConcurrent + 2 ids.
 */
export function kafkaSink<T>(options: KafkaSinkOptions<T>): Sink<T> & Preflightable {
  // Validated once, here: a bad option fails when the job is built, naming the setting and the fix.
  const { transactionTimeout: transactionTimeoutMs, recoveryBudget: recoveryBudgetMs } = parseKafkaSinkOptions(options);
  return {
    name: `kafka sink${options.topic === undefined ? '' : ` (${options.topic})`}`,
    deliveryGuarantee: options.deliveryGuarantee,
    async preflight(context: PreflightContext): Promise<PreflightFinding[]> {
      const where = `kafka sink "${context.uid}"`;
      try {
        const bootstrap = resolveBootstrap(options.bootstrap, 'kafkaSink');
        const findings: PreflightFinding[] = [];
        const missing = options.topic === undefined ? [] : await missingTopics(bootstrap, [options.topic], options.connection);
        for (const topic of missing) {
          findings.push({
            level: 'error',
            where,
            message: `${where}: its topic "${topic}" does not exist`,
            hint: 'create the topic first (Weir does not create topics)',
          });
        }
        if (options.deliveryGuarantee === 'exactly-once') {
          const brokerMax = await brokerTransactionMaxTimeout(bootstrap, options.connection);
          findings.push(...transactionTimeoutFindings(where, transactionTimeoutMs, recoveryBudgetMs, brokerMax, context));
        } else if (context.config.checkpointing !== undefined) {
          findings.push({
            level: 'warning',
            where,
            message: `${where} is ${options.deliveryGuarantee}: after a failure its output can hold duplicates${options.deliveryGuarantee === 'none' ? ' or miss records' : ''}`,
            hint: "use deliveryGuarantee: 'exactly-once' (and read the output with isolation.level=read_committed)",
          });
        }
        return findings;
      } catch (error) {
        return [unreachableFinding(where, error)];
      }
    },
    createOperator: () =>
      (options.deliveryGuarantee === 'exactly-once'
        ? new TwoPhaseCommitSinkOperator(new ExactlyOnceKafkaWriter(options, transactionTimeoutMs))
        : new AtLeastOnceKafkaWriter(options)) as unknown as StreamOperator<T, never>,
  };
}

/** Turns records into partitioned Kafka messages (shared by every delivery guarantee). */
class RecordSerializer<T> {
  readonly #options: KafkaSinkOptions<T>;
  readonly #connections: ClusterConnections;
  readonly #partitionCounts = new Map<string, number>();
  #roundRobin = 0;

  constructor(options: KafkaSinkOptions<T>, connections: ClusterConnections) {
    this.#options = options;
    this.#connections = connections;
  }

  async serialize(batch: T[]): Promise<MessageRecord[]> {
    const out: MessageRecord[] = new Array(batch.length);
    for (let i = 0; i < batch.length; i++) {
      const record = this.#options.serializer(batch[i] as T);
      const topic = record.topic ?? this.#options.topic;
      if (topic === undefined) {
        throw new WeirError('INVALID_SINK', 'a record has no topic: the serializer named none and the sink has no default topic', {
          hint: 'set kafkaSink({ topic }) or return a topic from the serializer',
        });
      }
      const key = toBuffer(record.key);
      let partition = record.partition;
      if (partition === undefined) {
        let count = this.#partitionCounts.get(topic);
        if (count === undefined) {
          count = (await this.#connections.topic(topic)).partitions.length;
          this.#partitionCounts.set(topic, count);
        }
        partition = this.#options.partitioner
          ? this.#options.partitioner(key, count)
          : key === null
            ? this.#roundRobin++ % count
            : (murmur2(key) & 0x7fffffff) % count;
      }
      const message: MessageRecord = { topic, partition, value: toBuffer(record.value) as Buffer };
      if (key !== null) message.key = key;
      if (record.timestamp !== undefined) message.timestamp = BigInt(record.timestamp);
      if (record.headers !== undefined)
        message.headers = new Map(Object.entries(record.headers).map(([name, value]) => [Buffer.from(name), toBuffer(value) as Buffer]));
      out[i] = message;
    }
    return out;
  }
}

interface KafkaTransaction {
  slot: number;
  open: OpenTransaction | undefined;
}

type SlotState = { state: 'free' } | { state: 'in-use' } | { state: 'cooling'; snapshotAfterCommit: number | undefined };

class ExactlyOnceKafkaWriter<T> implements TwoPhaseCommitLogic<T, KafkaTransaction, KafkaCommittable> {
  readonly #options: KafkaSinkOptions<T>;
  readonly #transactionTimeoutMs: number;
  #connections!: ClusterConnections;
  #driver!: TransactionDriver;
  #serializer!: RecordSerializer<T>;
  #prefix = '';
  #subtaskIndex = 0;
  readonly #slots: SlotState[] = [];

  constructor(options: KafkaSinkOptions<T>, transactionTimeoutMs: number) {
    this.#options = options;
    this.#transactionTimeoutMs = transactionTimeoutMs;
  }

  open(context: OperatorContext): void {
    this.#connections = new ClusterConnections(resolveBootstrap(this.#options.bootstrap, 'kafkaSink'), { clientId: 'weir-sink', ...this.#options.connection });
    this.#driver = new TransactionDriver(this.#connections, { transactionTimeoutMs: this.#transactionTimeoutMs });
    this.#serializer = new RecordSerializer(this.#options, this.#connections);
    this.#prefix = this.#options.transactionalIdPrefix ?? defaultTransactionalIdPrefix(context.jobName, context.uid);
    this.#subtaskIndex = context.subtaskIndex;
  }

  beginTransaction(): KafkaTransaction {
    let slot = this.#slots.findIndex((entry) => entry.state === 'free');
    if (slot < 0) slot = this.#slots.push({ state: 'free' }) - 1;
    this.#slots[slot] = { state: 'in-use' };
    return { slot, open: undefined }; // InitProducerId waits for the first record: empty transactions cost nothing
  }

  async write(transaction: KafkaTransaction, batch: T[]): Promise<void> {
    const messages = await this.#serializer.serialize(batch);
    transaction.open ??= await this.#driver.initTransaction(transactionalId(this.#prefix, this.#subtaskIndex, transaction.slot));
    await this.#driver.send(transaction.open, messages);
  }

  preCommit(transaction: KafkaTransaction, checkpointId: number): KafkaCommittable | null {
    // Slots committed before this snapshot are free once this checkpoint completes.
    for (const slot of this.#slots) if (slot.state === 'cooling' && slot.snapshotAfterCommit === undefined) slot.snapshotAfterCommit = checkpointId;
    // Every send was awaited in write(): all produce and AddPartitionsToTxn requests are acknowledged.
    if (transaction.open === undefined || transaction.open.records === 0) {
      this.#slots[transaction.slot] = { state: 'free' };
      return null; // never checkpoint an empty transaction
    }
    return committableOf(transaction.open);
  }

  async commit(committable: KafkaCommittable): Promise<void> {
    await this.#driver.commit(committable);
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
    if (transaction.open !== undefined) await this.#driver.abort(transaction.open);
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
    for (const id of await this.#driver.listOpenTransactions(`${this.#prefix}-`)) {
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

/** At-least-once: each batch is acknowledged by every replica before the next is taken, so nothing before a barrier can be lost. `none`: the same without waiting. */
class AtLeastOnceKafkaWriter<T> extends StreamOperator<T, never> {
  readonly #options: KafkaSinkOptions<T>;
  #connections!: ClusterConnections;
  #serializer!: RecordSerializer<T>;
  #producer!: PlainProducer;
  #pending: Promise<unknown>[] = [];

  constructor(options: KafkaSinkOptions<T>) {
    super();
    this.#options = options;
  }

  override open(): void {
    this.#connections = new ClusterConnections(resolveBootstrap(this.#options.bootstrap, 'kafkaSink'), { clientId: 'weir-sink', ...this.#options.connection });
    this.#serializer = new RecordSerializer(this.#options, this.#connections);
    this.#producer = new PlainProducer(this.#connections);
  }

  async processBatch(batch: T[]): Promise<never[]> {
    const messages = await this.#serializer.serialize(batch);
    const sent = this.#producer.send(messages, this.#options.deliveryGuarantee === 'at-least-once' ? -1 : 1);
    if (this.#options.deliveryGuarantee === 'at-least-once') await sent;
    else this.#pending.push(sent.catch(() => {}));
    if (this.#pending.length > 64) this.#pending = this.#pending.slice(-64);
    return [];
  }

  override async close(): Promise<void> {
    await Promise.all(this.#pending);
    await this.#connections.close().catch(() => {});
  }
}

function toBuffer(value: string | Buffer | null | undefined): Buffer | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'string' ? Buffer.from(value) : value;
}
