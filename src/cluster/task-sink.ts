import { TwoPhaseCommitSinkOperator } from '../connectors/two-phase-commit-sink.ts';
import type { Sink } from '../core/connector/sink.ts';
import type { TaskTransaction } from '../core/connector/task-transaction.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import type { StreamOperator } from '../core/operator/stream-operator.ts';
import { injectedFault, injectedFaultPoint } from '../runtime/jobmaster/injected-fault.ts';

/**
 * How a sink runs in a cluster task:
 * - `transaction`: its records go into the task's Kafka transaction (an exactly-once kafkaSink),
 *   committed with the task's checkpoint record;
 * - `two-phase-commit`: a {@link TwoPhaseCommitSinkOperator} (fileSink, postgresSink, any
 *   twoPhaseCommitSink): it pre-commits at the task's barrier, its committables are its operator
 *   state, which the task's checkpoint record names, so they commit atomically with the task's
 *   Kafka transaction; the sink commits them once that transaction committed
 *   (notifyCheckpointComplete), and the task's next owner, restoring the record, commits them again
 *   (a commit is idempotent, and commits the committable's own transaction, never one a fenced
 *   owner still running pre-committed under the same name since: test/integration/postgres/
 *   postgres-sink-stale-owner.test.ts) and aborts whatever the record does not hold, as one process does at a
 *   start from its latest checkpoint (Flink's committer, driven by the record). A task's final
 *   checkpoint (bounded input) too: its record says ended with `sinkCommit: pending`; once its sink
 *   committed, a second record says `committed`; an owner restoring a pending one does not run the
 *   task but opens its chain (the sink's restore commits the committables again) and commits that
 *   second record (cluster-task.ts); the cluster's end waits for it (cluster-end-watch.ts);
 * - `at-least-once`: a sink that promises no more (deliveryGuarantee 'at-least-once' or 'none'):
 *   it flushes at the barrier, as in one process; after a failover the records since the task's
 *   last checkpoint are written again (and a fenced owner may write some until it stops).
 */
export type TaskSinkKind = 'transaction' | 'two-phase-commit' | 'at-least-once';

/** The sink's kind in a cluster task, or the refusal naming it (an exactly-once sink that is neither of the first two). */
export function taskSinkKind(sink: Sink<unknown>, uid: string): TaskSinkKind | WeirError {
  if (sink.createTaskOperator !== undefined) return 'transaction';
  if (sink.createOperator() instanceof TwoPhaseCommitSinkOperator) return 'two-phase-commit';
  if (sink.deliveryGuarantee !== 'exactly-once') return 'at-least-once';
  return unsupportedSink(sink.name, uid);
}

/** The sink's operator in a cluster task writing into `transaction` (refused as {@link taskSinkKind} refuses), and its kind. */
export function createTaskSinkOperator(
  sink: Sink<unknown>,
  uid: string,
  transaction: TaskTransaction,
): { operator: StreamOperator<unknown, never>; kind: TaskSinkKind } {
  if (sink.createTaskOperator !== undefined) return { operator: sink.createTaskOperator(transaction), kind: 'transaction' };
  const operator = sink.createOperator();
  if (operator instanceof TwoPhaseCommitSinkOperator) return { operator, kind: 'two-phase-commit' };
  if (sink.deliveryGuarantee !== 'exactly-once') return { operator, kind: 'at-least-once' };
  throw unsupportedSink(sink.name, uid);
}

export function unsupportedSink(name: string, uid: string): WeirError {
  return new WeirError(
    'INVALID_CONFIG',
    `cluster mode cannot run sink "${uid}" (${name}): it is exactly-once, but it neither writes into a task's Kafka transaction nor is a two-phase-commit sink`,
    {
      hint: "in cluster mode an exactly-once sink is a kafkaSink on the cluster's brokers or a two-phase-commit sink (twoPhaseCommitSink, fileSink, postgresSink); else give it deliveryGuarantee 'at-least-once'",
    },
  );
}

/**
 * A test's crash after a task's Kafka commit, before its two-phase-commit sinks commit:
 * WEIR_FAULT=sink-commit:<checkpoint id>[:fail], or, for the task's part of a savepoint,
 * WEIR_FAULT=savepoint-sink-commit:<savepoint id>[:fail], or, for its final checkpoint (its record
 * says ended, bounded input), WEIR_FAULT=ended-sink-commit:<checkpoint id>[:fail].
 */
export function sinkCommitFault(checkpointId: number, savepointId: number | undefined, where: string, ended = false): WeirError | undefined {
  if (injectedFaultPoint === 'sink-commit') return injectedFault('sink-commit', checkpointId, where);
  if (injectedFaultPoint === 'ended-sink-commit' && ended) return injectedFault('ended-sink-commit', checkpointId, where);
  if (injectedFaultPoint === 'savepoint-sink-commit' && savepointId !== undefined) return injectedFault('savepoint-sink-commit', savepointId, where);
  return undefined;
}
