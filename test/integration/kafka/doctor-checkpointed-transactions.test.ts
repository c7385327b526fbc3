/**
 * `weir doctor --prefix --abort` after a crash between "checkpoint complete" and the commit. The
 * latest checkpoint holds pre-committed transactions that are still open: they are the job's
 * records up to that checkpoint (its state and offsets are past them), so aborting them loses the
 * records for good. The docs say "the next start, or `weir doctor --prefix --abort`, ends them":
 * doing the second must not lose anything. Doctor refuses without the job's checkpoints (naming the
 * option), and with them does what a start would: commits what the latest checkpoint holds, aborts
 * the rest. The next start is then exact, read_committed.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { weir } from '../../harness/cli.ts';
import { startJobProcess } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { checkpointHeldCommittables, openTransactionIds } from '../../harness/kafka-transactions.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
const COUNT = 10_000;

test('crash between checkpoint complete and commit, `weir doctor --prefix --abort` as the docs say, start again: nothing lost', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'doctor-held-in', 2);
  const output = await createTestTopic(brokers, 'doctor-held-out', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-doctor-held-'));
  const storage = join(folder, 'checkpoints');
  const prefix = `weir-${output.topic}`; // the job's prefix (kafka-count-job.ts)
  try {
    await writeChaosInput(brokers, input.topic, 2, COUNT);
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic };
    const config = { parallelism: 2, workers: 2, checkpointing: { interval: '200ms', storage } };

    const crashed = startJobProcess(jobModule, config, { ...env, KC_WORK_US: '200', WEIR_FAULT: 'after-checkpoint-metadata:>=2' });
    assert.equal((await crashed.exit).signal, 'SIGKILL', crashed.stderr);
    const held = await checkpointHeldCommittables(storage, 'output');
    assert.ok(held.committables.length > 0, `checkpoint ${held.checkpointId} holds pre-committed transactions`);
    const open = await openTransactionIds(brokers, prefix);
    // Some may be committed already (an earlier checkpoint's, still pending at this one's barrier); this one's are not.
    const stillOpen = held.committables.filter((committable) => open.includes(committable.transactionalId));
    assert.ok(stillOpen.length > 0, `checkpoint ${held.checkpointId}'s own pre-committed transactions are still open`);

    // What docs/connectors.md tells the user to do with the transactions a SIGKILL leaves open.
    const asDocumented = await weir(['doctor', '--prefix', prefix, '--abort'], env);
    if (asDocumented.code !== 0) {
      // Refused: it cannot know what the checkpoint holds. Its hint says what to run; run that.
      assert.match(asDocumented.stderr, /refusing to abort/);
      assert.match(asDocumented.stderr, /^hint: .*--checkpoint-storage <the job's checkpointing\.storage>/m);
      const withCheckpoints = await weir(['doctor', '--prefix', prefix, '--abort', '--checkpoint-storage', storage], env);
      assert.equal(withCheckpoints.code, 0, withCheckpoints.stdout + withCheckpoints.stderr);
      assert.match(
        withCheckpoints.stdout,
        new RegExp(`^committed ${stillOpen.length} transactions? checkpoint ${held.checkpointId} holds \\(as its next start would\\)`, 'm'),
      );
      assert.match(withCheckpoints.stdout, /^aborted \d+ lingering transactions?$/m);
      assert.deepEqual(await openTransactionIds(brokers, prefix), []);
    }

    const resumed = startJobProcess(jobModule, config, env);
    assert.equal((await resumed.exit).code, 0, resumed.stderr);
    assert.deepEqual(await auditCounts(brokers, output.topic, COUNT), exactCountAudit(COUNT));
    // Without the checkpoints doctor does not abort what a checkpoint may hold.
    assert.equal(asDocumented.code, 1, `doctor --abort without the job's checkpoints must refuse:\n${asDocumented.stdout}`);
  } finally {
    await input.remove();
    await output.remove();
    await rm(folder, { recursive: true, force: true });
  }
});
