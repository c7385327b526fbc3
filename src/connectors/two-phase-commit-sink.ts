import type { DeliveryGuarantee, Sink } from '../core/connector/sink.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { DeadLetterRecord } from '../core/functions/dead-letter.ts';
import type { MetricCounter } from '../core/metrics/metric-group.ts';
import { type OperatorContext, StreamOperator } from '../core/operator/stream-operator.ts';
import type { ListState } from '../core/state/state-types.ts';

/**
 * The newest version of the committable entries a two-phase-commit sink keeps in its checkpointed
 * state that this Weir reads. A sink writes {@link TwoPhaseCommitLogic.committableVersion}: 1, or 2
 * for the PostgreSQL sink's entries since its gids name their run (postgres-gid.ts: an older Weir
 * would not recognize them as its sink's, so it must refuse such a checkpoint).
 */
export const COMMITTABLE_STATE_VERSION = 2;

/** The union list state a two-phase-commit sink keeps its pre-committed, not yet committed, committables in. */
export const PENDING_COMMITTABLES_STATE = 'pending-committables';

/** One entry of {@link PENDING_COMMITTABLES_STATE}. */
export interface PendingCommittable<C> {
  version: number;
  /** The checkpoint whose barrier pre-committed it. */
  checkpointId: number;
  /** The subtask that wrote it (so a restore at another parallelism knows who commits it). */
  subtaskIndex: number;
  committable: C;
}

/** What a sink learns at start about the run it recovers from. */
export interface RecoveryContext<C> {
  subtaskIndex: number;
  parallelism: number;
  restoredCheckpointId: number | undefined;
  /** Every committable of the restored checkpoint, of all subtasks (each subtask re-commits its own share). */
  allRestoredCommittables: C[];
}

/**
 * The part of a two-phase-commit sink that knows its external system (Flink's
 * TwoPhaseCommitSinkFunction hooks). Commits must be idempotent: a commit of what is already
 * committed succeeds. A commit that finds its data gone must throw {@link dataLoss}: never skip it.
 * A commit commits the committable's own transaction and nothing else under its name: in cluster
 * mode a task's fenced owner that has not stopped yet pre-commits too, and a name made of (subtask,
 * checkpoint) alone is taken again by it once the rightful one committed (the file sink's names
 * carry a random part; the PostgreSQL sink's gids name the run, and it checks the prepared transaction's id).
 */
export interface TwoPhaseCommitLogic<IN, TXN, C> {
  /** The version its committable entries are written with (default 1; at most {@link COMMITTABLE_STATE_VERSION}). */
  readonly committableVersion?: number;
  /** Called first, with where the sink's subtask runs. */
  open?(context: OperatorContext): void | Promise<void>;
  beginTransaction(): TXN | Promise<TXN>;
  write(transaction: TXN, batch: IN[]): void | Promise<void>;
  /** Dead letters of the job's sources and operators (the sink's second input), into the same transaction. */
  writeDeadLetters?(transaction: TXN, letters: DeadLetterRecord[]): void | Promise<void>;
  /** Makes everything durable but invisible; null for an empty transaction (nothing is checkpointed). */
  preCommit(transaction: TXN, checkpointId: number): C | null | Promise<C | null>;
  commit(committable: C): void | Promise<void>;
  abort(transaction: TXN): void | Promise<void>;
  /** Whether a transaction holds no writes yet (the `transactions.open` metric counts only those that do). */
  isEmpty?(transaction: TXN): boolean;
  /**
   * After a restore, before any new write: abort what a crashed run left open that the checkpoint
   * does not hold. Returns how many it aborted (the `transactions.aborted` metric). In cluster mode
   * never what a LATER owner of the task wrote (`OperatorContext.taskOwner` orders a task's runs,
   * task-owner.ts): this run may have stood still between its fencing and its recovery while the
   * task moved on, and the later owner's pre-commits are in records that commit. The file and
   * PostgreSQL sinks name the owner in what they pre-commit.
   */
  abortLingering?(context: RecoveryContext<C>): number | Promise<number>;
  /** After the committables up to this checkpoint are committed. */
  notifyCheckpointComplete?(checkpointId: number): void | Promise<void>;
  /**
   * After a restore: how many records of the restored checkpoint it keeps to write into its next
   * transaction (none written yet or not yet committed), rather than committing what was written
   * (the PostgreSQL sink's carried rows of a transaction its run never prepared). While any are
   * owed the restored checkpoint is not recorded as committed, and a job end fails its sink's end.
   */
  restoredRecordsOwed?(): number;
  /** The sink closes (after its open transaction was aborted): release connections. */
  close?(): void | Promise<void>;
}

/** Refuses a committable entry newer than this Weir reads. */
export function checkCommittableVersion(entry: { version: number }, holder: string): void {
  if (entry.version > COMMITTABLE_STATE_VERSION) {
    throw new WeirError(
      'UNSUPPORTED_STATE_VERSION',
      `${holder} holds committables of version ${entry.version}, newer than this Weir reads (${COMMITTABLE_STATE_VERSION})`,
      {
        hint: 'run the Weir version that wrote the checkpoint',
      },
    );
  }
}

export function dataLoss(message: string, hint: string): WeirError {
  return new WeirError('DATA_LOSS', message, { hint, fault: 'external', retriable: false });
}

/**
 * Runs a {@link TwoPhaseCommitLogic}: records go into the current transaction; on barrier N the
 * transaction is pre-committed and its committable kept as pending[N] in the sink's checkpointed
 * state, and a new one begins; on "checkpoint N complete" every pending committable up to N is
 * committed; on restore the committables of the checkpoint are committed again (they may or may
 * not have been before the crash) and lingering transactions are aborted.
 */
export class TwoPhaseCommitSinkOperator<IN, TXN, C> extends StreamOperator<IN, never> {
  readonly #logic: TwoPhaseCommitLogic<IN, TXN, C>;
  #state!: ListState<PendingCommittable<C>>;
  #pending: PendingCommittable<C>[] = [];
  #transaction: TXN | undefined;
  /** Its restore kept records of the restored checkpoint to write into its next transaction (TwoPhaseCommitLogic.restoredRecordsOwed). */
  #restoredIncompletely = false;
  #subtaskIndex = 0;
  #preCommitted!: MetricCounter;
  #committed!: MetricCounter;
  #aborted!: MetricCounter;

  constructor(logic: TwoPhaseCommitLogic<IN, TXN, C>) {
    super();
    this.#logic = logic;
  }

  override async open(context: OperatorContext): Promise<void> {
    this.#subtaskIndex = context.subtaskIndex;
    // The sink's transactions, as the dashboard shows them: open (holding writes), pre-committed
    // (waiting for their checkpoint to complete), committed, aborted.
    this.#preCommitted = context.metrics.counter('transactions.preCommitted');
    this.#committed = context.metrics.counter('transactions.committed');
    this.#aborted = context.metrics.counter('transactions.aborted');
    context.metrics.gauge('transactions.pending', () => this.#pending.length);
    context.metrics.gauge('transactions.open', () => (this.#transaction === undefined || (this.#logic.isEmpty?.(this.#transaction as TXN) ?? false) ? 0 : 1));
    await this.#logic.open?.(context);
    await this.#recover(context, false);
    this.#restoredIncompletely = (this.#logic.restoredRecordsOwed?.() ?? 0) > 0;
    this.#pending = [];
    this.#state.update([]);
    this.#transaction = await this.#logic.beginTransaction();
  }

  /**
   * The job has ended (finished, failed for good, cancelled) and its tasks are gone: does what a
   * start from the latest completed checkpoint does (the context is restored from it), so nothing
   * the job wrote stays open: commits what that checkpoint holds, aborts every other transaction of
   * this subtask's share. A failed commit does not stop the aborts; it is thrown after them.
   */
  async finishAtJobEnd(context: OperatorContext): Promise<void> {
    this.#subtaskIndex = context.subtaskIndex;
    this.#preCommitted = context.metrics.counter('transactions.preCommitted');
    this.#committed = context.metrics.counter('transactions.committed');
    this.#aborted = context.metrics.counter('transactions.aborted');
    try {
      await this.#logic.open?.(context);
      await this.#recover(context, true);
      const owed = this.#logic.restoredRecordsOwed?.() ?? 0;
      if (owed > 0) {
        throw new WeirError(
          'TASK_FAILED',
          `sink "${context.operatorName}" (subtask ${context.subtaskIndex}): ${owed} records of checkpoint ${context.restoredCheckpointId} are kept in it to be written again (a transaction its run never prepared), and the job has ended: not written now`,
          { fault: 'external', retriable: true, hint: 'the next start from this checkpoint storage writes them (the checkpoint is not recorded as committed)' },
        );
      }
    } finally {
      await this.#logic.close?.();
    }
  }

  /** Commits the restored checkpoint's committables of this subtask and aborts what lingers (with `keepGoing`, despite a failed commit). */
  async #recover(context: OperatorContext, keepGoing: boolean): Promise<void> {
    this.#state = context.operatorState.getUnionListState<PendingCommittable<C>>(PENDING_COMMITTABLES_STATE);
    // A savepoint reported complete only after its commits holds nothing to commit or to keep.
    const restored = context.restoredTransactionsCommitted ? [] : this.#state.get();
    for (const entry of restored) checkCommittableVersion(entry, `sink "${context.operatorName}"`);
    const mine = restored.filter((entry) => entry.subtaskIndex % context.parallelism === context.subtaskIndex).sort((a, b) => a.checkpointId - b.checkpointId);
    let failure: unknown;
    const superseded = new Set<PendingCommittable<C>>();
    for (const entry of mine) {
      try {
        await this.#logic.commit(entry.committable);
      } catch (error) {
        // An older checkpoint restored on purpose: a later one completed, so this was committed, and
        // its transactional id may carry a newer transaction now (not held: what is open there lingers).
        if (context.restoredCheckpointSupersededBy !== undefined && error instanceof WeirError && error.code === 'DATA_LOSS') {
          superseded.add(entry);
          continue;
        }
        if (!keepGoing) throw error;
        failure ??= error;
        continue;
      }
      this.#committed.inc();
    }
    const abortedLingering = await this.#logic.abortLingering?.({
      subtaskIndex: context.subtaskIndex,
      parallelism: context.parallelism,
      restoredCheckpointId: context.restoredCheckpointId,
      allRestoredCommittables: restored.filter((entry) => !superseded.has(entry)).map((entry) => entry.committable),
    });
    if (abortedLingering !== undefined) this.#aborted.inc(abortedLingering);
    if (failure !== undefined) throw failure;
  }

  async processBatch(batch: IN[]): Promise<never[]> {
    await this.#logic.write(this.#transaction as TXN, batch);
    return [];
  }

  override async processBatch2(batch: unknown[]): Promise<never[]> {
    if (this.#logic.writeDeadLetters === undefined) throw new WeirError('INTERNAL', 'this two-phase-commit sink takes no dead letters', { fault: 'internal' });
    await this.#logic.writeDeadLetters(this.#transaction as TXN, batch as DeadLetterRecord[]);
    return [];
  }

  override async snapshotState(checkpointId: number): Promise<void> {
    const committable = await this.#logic.preCommit(this.#transaction as TXN, checkpointId);
    if (committable !== null) {
      this.#pending.push({ version: this.#logic.committableVersion ?? 1, checkpointId, subtaskIndex: this.#subtaskIndex, committable });
      this.#preCommitted.inc();
    }
    this.#state.update(this.#pending);
    this.#transaction = await this.#logic.beginTransaction();
  }

  override restoredIncompletely(): boolean {
    return this.#restoredIncompletely;
  }

  override async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    // Completing N subsumes everything below it: commit every pending committable up to N, in order.
    while (this.#pending.length > 0 && (this.#pending[0] as PendingCommittable<C>).checkpointId <= checkpointId) {
      await this.#logic.commit((this.#pending[0] as PendingCommittable<C>).committable);
      this.#pending.shift();
      this.#committed.inc();
    }
    await this.#logic.notifyCheckpointComplete?.(checkpointId);
  }

  override async close(): Promise<void> {
    if (this.#transaction !== undefined) {
      const empty = this.#logic.isEmpty?.(this.#transaction) ?? false;
      await this.#logic.abort(this.#transaction);
      if (!empty) this.#aborted.inc();
    }
    this.#transaction = undefined;
    await this.#logic.close?.();
  }
}

/** A two-phase-commit sink's {@link Sink.onJobEnd}: each subtask's share finished by a fresh operator, all at once. */
export async function finishTransactionsAtJobEnd<IN, TXN, C>(
  createOperator: () => TwoPhaseCommitSinkOperator<IN, TXN, C>,
  subtasks: readonly OperatorContext[],
): Promise<void> {
  const results = await Promise.allSettled(subtasks.map((context) => createOperator().finishAtJobEnd(context)));
  const failed = results.find((result) => result.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** Makes a {@link Sink} of a two-phase-commit logic factory (one logic per subtask). */
export function twoPhaseCommitSink<IN, TXN, C>(
  name: string,
  createLogic: () => TwoPhaseCommitLogic<IN, TXN, C>,
  deliveryGuarantee: DeliveryGuarantee = 'exactly-once',
): Sink<IN> {
  return {
    name,
    deliveryGuarantee,
    createOperator: () => new TwoPhaseCommitSinkOperator<IN, TXN, C>(createLogic()) as unknown as StreamOperator<IN, never>,
    onJobEnd: (subtasks) => finishTransactionsAtJobEnd(() => new TwoPhaseCommitSinkOperator<IN, TXN, C>(createLogic()), subtasks),
  };
}
