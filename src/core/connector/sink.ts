import type { OperatorContext, StreamOperator } from '../operator/stream-operator.ts';
import type { TaskTransaction } from './task-transaction.ts';

export type DeliveryGuarantee = 'exactly-once' | 'at-least-once' | 'none';

export interface Sink<IN> {
  readonly name: string;
  readonly deliveryGuarantee: DeliveryGuarantee;
  createOperator(): StreamOperator<IN, never>;
  /**
   * Called by the job master once when the job has ended for any reason (finished, failed for
   * good, cancelled, cancelled during a restart wait), after its tasks are gone, with one context
   * per subtask restored from the latest completed checkpoint (as a start from it would be): a
   * transactional sink finishes what its tasks left open, committing what that checkpoint holds
   * and aborting the rest, so no transaction lingers until the external system's timeout.
   */
  onJobEnd?(subtasks: readonly OperatorContext[]): Promise<void>;
  /**
   * A transactional sink that can write dead letters into its own transactions (the exactly-once
   * Kafka sink): the same sink, whose operator also takes DeadLetterRecords on its second input
   * (processBatch2) and writes each to its `topic`, and whose preflight checks these topics.
   */
  withDeadLetters?(topics: readonly string[]): Sink<IN>;
  /**
   * Cluster mode (`weir run --cluster`): the sink's operator writing into the transaction of the
   * task it runs in, committed with the task's checkpoint. A sink without it cannot run in cluster
   * mode (the member refuses the job by the sink's name).
   */
  createTaskOperator?(transaction: TaskTransaction): StreamOperator<IN, never>;
}
