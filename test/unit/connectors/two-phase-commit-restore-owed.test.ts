/**
 * A two-phase-commit sink whose restore keeps records of the restored checkpoint to write into its
 * next transaction (the PostgreSQL sink's carried rows of a transaction its run never prepared):
 * the restored checkpoint must not be recorded as committed (a start from it again must write them),
 * and a job's end, which writes no next transaction, must not report its sink finished.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type TwoPhaseCommitLogic, TwoPhaseCommitSinkOperator } from '../../../src/connectors/two-phase-commit-sink.ts';
import type { OperatorContext } from '../../../src/core/operator/stream-operator.ts';
import { testOperatorContext } from '../../harness/operator-context.ts';

function logic(owed: number): TwoPhaseCommitLogic<string, { records: string[] }, string> {
  return {
    beginTransaction: () => ({ records: [] }),
    write: (transaction, batch) => {
      transaction.records.push(...batch);
    },
    preCommit: () => null,
    commit: () => {},
    abort: () => {},
    restoredRecordsOwed: () => owed,
  };
}

function context(): OperatorContext {
  return testOperatorContext({ attemptNumber: 1, restoredCheckpointId: 4 });
}

test('a restore that keeps records to write again says so: its checkpoint is not recorded as committed', async () => {
  const owing = new TwoPhaseCommitSinkOperator(logic(3));
  await owing.open(context());
  assert.equal(owing.restoredIncompletely(), true);
  const even = new TwoPhaseCommitSinkOperator(logic(0));
  await even.open(context());
  assert.equal(even.restoredIncompletely(), false);
});

test("at the job's end such a restore fails the sink's end (not reported finished), naming the records and the checkpoint", async () => {
  await assert.rejects(new TwoPhaseCommitSinkOperator(logic(3)).finishAtJobEnd(context()), /3 records of checkpoint 4 are kept in it to be written again/);
  await new TwoPhaseCommitSinkOperator(logic(0)).finishAtJobEnd(context());
});
