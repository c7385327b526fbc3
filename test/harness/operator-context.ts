/** An OperatorContext for unit tests of one operator: no chain, no timers, outputs that go nowhere; `overrides` set the rest. */
import type { OperatorContext } from '../../src/core/operator/stream-operator.ts';
import { TaskMetrics } from '../../src/runtime/metrics/task-metrics.ts';
import { OperatorStateBackend } from '../../src/state/operator-state-backend.ts';

export function testOperatorContext(overrides: Partial<OperatorContext> = {}): OperatorContext {
  return {
    jobName: 'test',
    operatorName: 'sink',
    uid: 'sink',
    subtaskIndex: 0,
    parallelism: 1,
    maxParallelism: 128,
    attemptNumber: 0,
    restoredCheckpointId: undefined,
    restoredTransactionsCommitted: false,
    checkpointingMode: 'exactly-once',
    keyedState: undefined,
    operatorState: new OperatorStateBackend(),
    metrics: new TaskMetrics().group('sink'),
    currentProcessingTime: Date.now,
    requestProcessingTimeCallback: () => {},
    output: () => false,
    executeMail: () => {},
    emit: async () => {},
    emitWatermark: async () => {},
    ...overrides,
  };
}
