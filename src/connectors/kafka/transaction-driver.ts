import type { Connection, MessageRecord } from '@platformatic/kafka';
import { WeirError } from '../../core/errors/weir-error.ts';
import { dataLoss } from '../two-phase-commit-sink.ts';
import type { ClusterConnections } from './cluster-connections.ts';
import { fencedOr } from './fenced-or.ts';
import { type KafkaCommittable, type OpenTransaction, TRANSACTION_PROTOCOL } from './kafka-committable.ts';
import { hasKafkaError, kafkaErrorIds } from './kafka-error-ids.ts';
import {
  addOffsetsToTxnV4,
  addPartitionsToTxnV3,
  describeTransactionsV0,
  endTxnV4,
  findCoordinatorV6,
  initProducerIdV4,
  listTransactionsV1,
  NumericMap,
  txnOffsetCommitV4,
} from './kafka-protocol.ts';
import type { InputOffset, OffsetsOwner } from './offsets-owner.ts';
import { PartitionLeaders } from './partition-leaders.ts';
import { ProducePipeline } from './produce-pipeline.ts';
import { produceRequest } from './produce-request.ts';
import { BATCH_BYTES_LIMIT } from './record-accumulator.ts';
import { retryKafkaRequest } from './retry-kafka-request.ts';
import type { TransactionDescription } from './transaction-description.ts';
import { parseTransactionalId } from './transactional-id.ts';

export { fencedOr } from './fenced-or.ts';
// Kept here too: every importer of the driver's types and helpers goes on importing them from the driver.
export { committableOf, type KafkaCommittable, type OpenTransaction, TRANSACTION_PROTOCOL } from './kafka-committable.ts';
export type { InputOffset, OffsetsOwner } from './offsets-owner.ts';
export type { TransactionDescription } from './transaction-description.ts';

const GROUP_KEY_TYPE = 0;
const TRANSACTION_KEY_TYPE = 1;

const ACKS_ALL = -1;

export interface TransactionDriverOptions {
  transactionTimeoutMs: number;
  /** How long a request may be retried on retriable errors (coordinator moves, broker restarts) before failing. */
  retryTimeoutMs?: number;
}

/**
 * Drives Kafka transactions at the protocol level with pinned request versions (FindCoordinator v6,
 * InitProducerId v4, AddPartitionsToTxn v3, Produce v11, EndTxn v4), because a transaction
 * pre-committed by a process that crashed must be committed by another one from its committable
 * alone, without InitProducerId (which would abort it). No Node client can do that.
 */
export class TransactionDriver {
  readonly #connections: ClusterConnections;
  readonly #options: Required<TransactionDriverOptions>;
  readonly #coordinators = new Map<string, number>();
  readonly #leaders: PartitionLeaders;
  /** The produce requests in flight, per open transaction. */
  readonly #pipelines = new WeakMap<OpenTransaction, ProducePipeline>();
  /** The partitions each open transaction has added (transaction.partitions by topic). */
  readonly #addedPartitions = new WeakMap<OpenTransaction, Map<string, Set<number>>>();
  /** Before a retry: the coordinator or a leader may have moved. */
  readonly #forgetRoutes = () => {
    this.#coordinators.clear();
    this.#leaders.forget();
  };

  constructor(connections: ClusterConnections, options: TransactionDriverOptions) {
    this.#connections = connections;
    this.#options = { retryTimeoutMs: 60_000, ...options };
    this.#leaders = new PartitionLeaders(connections);
  }

  /** The transaction.timeout.ms every InitProducerId of this driver asks for: the broker aborts a transaction open longer. */
  get transactionTimeoutMs(): number {
    return this.#options.transactionTimeoutMs;
  }

  /**
   * InitProducerId for a transactional id: fences every earlier producer of the id and aborts its
   * open transaction (Kafka answers CONCURRENT_TRANSACTIONS while that abort completes: retried).
   */
  async initTransaction(transactionalId: string): Promise<OpenTransaction> {
    const response = await this.#retry(`InitProducerId for "${transactionalId}"`, async () =>
      initProducerIdV4.api.async(await this.#coordinator(transactionalId), transactionalId, this.#options.transactionTimeoutMs, -1n, -1),
    ).catch((error: unknown) => {
      if (hasKafkaError(error, 'INVALID_TRANSACTION_TIMEOUT')) {
        throw new WeirError(
          'TRANSACTION_TIMEOUT_REFUSED',
          `the broker refused transaction.timeout.ms=${this.#options.transactionTimeoutMs} for "${transactionalId}": it is above the broker's transaction.max.timeout.ms`,
          { hint: "lower the sink's transactionTimeout, or raise transaction.max.timeout.ms on the brokers" },
        );
      }
      throw error;
    });
    return {
      transactionalId,
      producerId: response.producerId,
      producerEpoch: response.producerEpoch,
      partitions: new Set(),
      sequences: new NumericMap(),
      records: 0,
    };
  }

  /** The next transaction of the same producer, after `previous` was committed or aborted: same id and epoch, sequences going on. */
  nextTransaction(previous: OpenTransaction): OpenTransaction {
    return { ...previous, partitions: new Set(), records: 0 };
  }

  /** Writes records (each with its topic and partition) into the transaction and waits until every request of it is acknowledged. */
  async send(transaction: OpenTransaction, records: MessageRecord[]): Promise<void> {
    await this.sendPipelined(transaction, records);
    await this.flush(transaction);
  }

  /**
   * Writes records into the transaction, registering new partitions first, and returns once they
   * are sent or held: records gather and go out together (the Java producer's batching) once
   * COALESCE_BYTES are held, up to MAX_PRODUCE_IN_FLIGHT requests, and a request's worth
   * (BATCH_BYTES_LIMIT) waits for room (ProducePipeline.shouldSendHeld). {@link flush} sends what
   * is held and waits for every acknowledgement. A failure shows at the next send or flush.
   */
  async sendPipelined(transaction: OpenTransaction, records: MessageRecord[]): Promise<void> {
    if (records.length === 0) return;
    const pipeline = this.#pipelineOf(transaction);
    pipeline.throwIfFailed();
    await this.#addPartitions(transaction, records);
    pipeline.hold(records);
    transaction.records += records.length;
    while (pipeline.shouldSendHeld) await this.#sendHeld(transaction, pipeline);
  }

  /** Sends what the transaction holds and waits until every produce request of it is acknowledged; throws the first failure no retry cured. */
  async flush(transaction: OpenTransaction): Promise<void> {
    const pipeline = this.#pipelines.get(transaction);
    if (pipeline === undefined) return;
    while (pipeline.heldBytes > 0) await this.#sendHeld(transaction, pipeline);
    await pipeline.flush();
  }

  /**
   * Sends up to a request's worth of the batches held, one request per leader, of the partitions
   * with room (a partition whose batch is retried, or with a full window, keeps its batches held
   * while the others' go out); waits for an answer when no partition held has room. The batches
   * are sealed as they are taken, with their partitions' next sequence numbers (moved on), so the
   * requests in flight follow each other; a request in flight (which may be retried) holds its
   * batches' bytes.
   */
  async #sendHeld(transaction: OpenTransaction, pipeline: ProducePipeline): Promise<void> {
    const { transactionalId, producerId, producerEpoch } = transaction;
    const chunk = pipeline.takeHeld(BATCH_BYTES_LIMIT, { transactionalId, producerId, producerEpoch }, transaction.sequences);
    if (chunk.length === 0) return pipeline.waitForChange();
    const byLeader = await this.#retry('Metadata for the leaders', () => this.#leaders.groupByLeader(chunk));
    for (const [leader, batches] of byLeader) {
      const partitions = batches.map((batch) => `${batch.topic}:${batch.partition}`);
      await pipeline.reserve(partitions);
      // A retry resends the same batches (same producer id, epoch and sequences: the broker keeps no duplicate) to the leaders of now.
      const attempt = this.#leaders.sendToLeaders(leader, batches, async (current, routed) =>
        produceRequest.async(await this.#connections.node(current), ACKS_ALL, 30_000, routed, transactionalId),
      );
      pipeline.send(partitions, attempt, () => {
        this.#forgetRoutes();
        return this.#retry(`Produce for "${transactionalId}"`, attempt);
      });
    }
  }

  /** AddPartitionsToTxn for the partitions the transaction has not written to yet, acknowledged before their records are sent. */
  async #addPartitions(transaction: OpenTransaction, records: MessageRecord[]): Promise<void> {
    // The partitions added so far by topic (no "topic:partition" string per record): transaction.partitions, indexed.
    let known = this.#addedPartitions.get(transaction);
    if (known === undefined) {
      known = new Map();
      this.#addedPartitions.set(transaction, known);
    }
    const added = new Map<string, Set<number>>();
    for (const record of records) {
      if (known.get(record.topic)?.has(record.partition as number) === true) continue;
      let partitions = added.get(record.topic);
      if (partitions === undefined) {
        partitions = new Set();
        added.set(record.topic, partitions);
      }
      partitions.add(record.partition as number);
    }
    if (added.size === 0) return;
    await this.#retry(`AddPartitionsToTxn for "${transaction.transactionalId}"`, async () =>
      addPartitionsToTxnV3.api.async(await this.#coordinator(transaction.transactionalId), [
        {
          transactionalId: transaction.transactionalId,
          producerId: transaction.producerId,
          producerEpoch: transaction.producerEpoch,
          verifyOnly: false,
          topics: [...added].map(([name, partitions]) => ({ name, partitions: [...partitions] })),
        },
      ]),
    );
    for (const [topic, partitions] of added) {
      let topicKnown = known.get(topic);
      if (topicKnown === undefined) {
        topicKnown = new Set();
        known.set(topic, topicKnown);
      }
      for (const partition of partitions) {
        transaction.partitions.add(`${topic}:${partition}`);
        topicKnown.add(partition);
      }
    }
  }

  #pipelineOf(transaction: OpenTransaction): ProducePipeline {
    let pipeline = this.#pipelines.get(transaction);
    if (pipeline === undefined) {
      pipeline = new ProducePipeline();
      this.#pipelines.set(transaction, pipeline);
    }
    return pipeline;
  }

  /**
   * Commits a pre-committed transaction from its committable, without InitProducerId. A repeated
   * commit succeeds. An answer meaning the transaction is gone is data loss and is thrown as such.
   */
  async commit(committable: KafkaCommittable): Promise<void> {
    if (committable.protocol !== TRANSACTION_PROTOCOL) {
      throw new WeirError(
        'UNSUPPORTED_COMMITTABLE',
        `the committable of "${committable.transactionalId}" uses protocol ${committable.protocol}, which this Weir does not drive`,
        {
          hint: 'finish the job with the Weir version that wrote the checkpoint',
        },
      );
    }
    await this.#endTransaction(committable, true).catch((error: unknown) => {
      const ids = kafkaErrorIds(error);
      const lost = ids.find((id) =>
        ['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH', 'INVALID_TXN_STATE', 'INVALID_PRODUCER_ID_MAPPING', 'TRANSACTIONAL_ID_NOT_FOUND'].includes(id),
      );
      if (lost === undefined) throw error;
      throw dataLoss(
        `Kafka answered ${lost} to the commit of transaction "${committable.transactionalId}" (producer id ${committable.producerId}, epoch ${committable.producerEpoch}): ` +
          'the transaction was aborted before its commit and its records are lost',
        lost === 'INVALID_PRODUCER_ID_MAPPING' || lost === 'TRANSACTIONAL_ID_NOT_FOUND'
          ? 'the transactional id expired on the broker (transactional.id.expiration.ms): the job was down too long; restore from a savepoint taken before the loss'
          : "most likely the broker's transaction timeout expired before the commit (a checkpoint or a recovery took longer than the sink's transactionTimeout): raise transactionTimeout (within the broker's transaction.max.timeout.ms) or make checkpoints faster; or another producer used the same transactional id (two jobs sharing a transactionalIdPrefix)",
      );
    });
  }

  /**
   * Commits input offsets in the transaction (AddOffsetsToTxn, then TxnOffsetCommit to the group's
   * coordinator, KIP-447): they become the group's committed offsets if and only if the transaction
   * commits. A member the group has moved on from is refused (ILLEGAL_GENERATION,
   * UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID): thrown, so its transaction can never commit.
   */
  async sendOffsets(transaction: OpenTransaction, owner: OffsetsOwner, offsets: readonly InputOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    const { transactionalId, producerId, producerEpoch } = transaction;
    await this.#retry(`AddOffsetsToTxn for "${transactionalId}"`, async () =>
      addOffsetsToTxnV4.api.async(await this.#coordinator(transactionalId), transactionalId, producerId, producerEpoch, owner.groupId),
    );
    const byTopic = new Map<string, { partitionIndex: number; committedOffset: bigint; committedLeaderEpoch: number }[]>();
    for (const { topic, partition, offset } of offsets) {
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), { partitionIndex: partition, committedOffset: offset, committedLeaderEpoch: -1 }]);
    }
    await this.#retry(`TxnOffsetCommit for "${transactionalId}" in group "${owner.groupId}"`, async () =>
      txnOffsetCommitV4.api.async(
        await this.#coordinator(owner.groupId, GROUP_KEY_TYPE),
        transactionalId,
        owner.groupId,
        producerId,
        producerEpoch,
        owner.generationId,
        owner.memberId,
        owner.groupInstanceId,
        [...byTopic].map(([name, partitions]) => ({ name, partitions })),
      ),
    );
    transaction.partitions.add(`__consumer_offsets:${owner.groupId}`); // something to end: never skip its EndTxn
  }

  /**
   * Commits a transaction this process has open, from start to end in one go (cluster mode's task
   * checkpoints). A producer or member that was fenced (its work moved to another) is answered
   * TASK_FENCED: its transaction is aborted, which is what must happen to a zombie's work.
   */
  async commitOpen(transaction: OpenTransaction): Promise<void> {
    await this.flush(transaction).catch((error: unknown) => {
      throw fencedOr(error, transaction.transactionalId);
    });
    await this.#endTransaction(transaction, true).catch((error: unknown) => {
      throw fencedOr(error, transaction.transactionalId);
    });
  }

  /** Aborts an open transaction of this process. */
  async abort(transaction: OpenTransaction): Promise<void> {
    if (transaction.partitions.size === 0) return; // nothing was written: nothing to abort
    await this.#pipelines.get(transaction)?.settle(); // no produce request may arrive after the abort
    await this.#endTransaction(transaction, false);
  }

  /** Aborts whatever is open under a transactional id (a crashed run's lingering transaction) by fencing it. */
  async abortLingering(transactionalId: string): Promise<void> {
    await this.initTransaction(transactionalId);
  }

  /**
   * The transactional ids of this prefix (`<prefix>-<subtask>-<slot>` exactly, transactional-id.ts)
   * that have an open (Ongoing) transaction, on every broker. Ids of another sink whose prefix
   * merely starts with this one (`<prefix>-x-0-3`) are not listed.
   */
  async listOpenTransactions(prefix: string): Promise<string[]> {
    const metadata = await this.#retry('Metadata', () => this.#connections.metadata([]));
    const ids = new Set<string>();
    for (const broker of metadata.brokers) {
      const response = await this.#retry('ListTransactions', async () =>
        listTransactionsV1.api.async(await this.#connections.node(broker.nodeId), ['Ongoing'], [], -1n, null),
      );
      for (const state of response.transactionStates) {
        if (parseTransactionalId(prefix, state.transactionalId) !== undefined) ids.add(state.transactionalId);
      }
    }
    return [...ids].sort();
  }

  /**
   * What the coordinators know of these transactional ids (DescribeTransactions): state, producer,
   * start time, partitions. An id its coordinator does not know (TRANSACTIONAL_ID_NOT_FOUND: never
   * used, or expired after transactional.id.expiration.ms) has nothing open: it is left out.
   */
  async describeTransactions(ids: readonly string[]): Promise<TransactionDescription[]> {
    const descriptions: TransactionDescription[] = [];
    for (const id of ids) {
      const response = await this.#retry(`DescribeTransactions for "${id}"`, async () =>
        describeTransactionsV0.api.async(await this.#coordinator(id), [id]).catch((error: unknown) => {
          // The client throws on any error code in the answer; an unknown id alone is no failure.
          const errorIds = kafkaErrorIds(error);
          if (errorIds.length > 0 && errorIds.every((errorId) => errorId === 'TRANSACTIONAL_ID_NOT_FOUND')) return { transactionStates: [] };
          throw error;
        }),
      );
      for (const state of response.transactionStates) {
        if (state.errorCode !== 0) continue; // not reached: the client throws on an error code
        descriptions.push({
          transactionalId: state.transactionalId,
          state: state.transactionState,
          producerId: state.producerId,
          producerEpoch: state.producerEpoch,
          startTimeMs: Number(state.transactionStartTimeMs),
          timeoutMs: state.transactionTimeoutMs,
          partitions: state.topics.reduce((sum, topic) => sum + topic.partitions.length, 0),
        });
      }
    }
    return descriptions;
  }

  async #endTransaction(transaction: { transactionalId: string; producerId: bigint; producerEpoch: number }, commit: boolean): Promise<void> {
    await this.#retry(`EndTxn(${commit ? 'commit' : 'abort'}) for "${transaction.transactionalId}"`, async () =>
      endTxnV4.api.async(
        await this.#coordinator(transaction.transactionalId),
        transaction.transactionalId,
        transaction.producerId,
        transaction.producerEpoch,
        commit,
      ),
    );
  }

  /** The coordinator of a transactional id (or, with GROUP_KEY_TYPE, of a consumer group). */
  async #coordinator(key: string, keyType = TRANSACTION_KEY_TYPE): Promise<Connection> {
    const cacheKey = `${keyType}:${key}`;
    let nodeId = this.#coordinators.get(cacheKey);
    if (nodeId === undefined) {
      const response = await findCoordinatorV6.api.async(await this.#connections.any(), keyType, [key]);
      const coordinator = response.coordinators[0];
      if (coordinator === undefined || coordinator.errorCode !== 0) {
        throw Object.assign(
          new Error(`no ${keyType === GROUP_KEY_TYPE ? 'group' : 'transaction'} coordinator for "${key}" (error ${coordinator?.errorCode})`),
          { apiId: 'COORDINATOR_NOT_AVAILABLE' },
        );
      }
      nodeId = coordinator.nodeId;
      this.#coordinators.set(cacheKey, nodeId);
    }
    return this.#connections.node(nodeId);
  }

  #retry<T>(what: string, request: () => Promise<T>): Promise<T> {
    return retryKafkaRequest(what, request, this.#options.retryTimeoutMs, this.#forgetRoutes, this.#connections);
  }
}
