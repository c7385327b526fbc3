/**
 * Unaligned checkpoints (Flink's FLIP-76) against the real broker: Kafka -> keyBy -> a slow keyed
 * running count (1 ms of work per record, far below what the source reads) -> exactly-once Kafka
 * sink, parallelism 2, buffer debloating off so every channel into the count holds its full credit
 * of records. With `checkpointing.unaligned` the barriers overtake those records, which become the
 * checkpoints' channel state. The process is SIGKILLed right after an unaligned checkpoint holding
 * channel state completed, then at a random moment after the restored run completed one of its
 * own, and restarted each time: each restart replays
 * the restored checkpoint's in-flight records before new input. Read back read_committed, every
 * input record is in the output exactly once and every key's running counts are exactly 1..n.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CompletedCheckpointStore } from '../../../src/checkpoint/storage/completed-checkpoint-store.ts';
import { FileSystemCheckpointStorage } from '../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { auditKeyedSum } from '../../harness/keyed-sum-audit.ts';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs');
const job = join(fixtures, 'kafka-count-job.ts');

/** The records in flight a completed checkpoint holds: subtasks with a channel state file, per task. */
async function channelStateOf(storagePath: string): Promise<{ checkpointId: number; files: number } | undefined> {
  const latest = await new CompletedCheckpointStore(new FileSystemCheckpointStorage(storagePath)).latest();
  if (latest === undefined) return undefined;
  const files = latest.operators
    .filter((operator) => operator.uid.endsWith('#channel-state'))
    .reduce((sum, operator) => sum + operator.subtasks.filter((subtask) => subtask.operator !== undefined).length, 0);
  return { checkpointId: latest.checkpointId, files };
}

describe('unaligned checkpoints under back pressure', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  test('SIGKILL after an unaligned checkpoint with channel state completed, then at random: the output is exact', async (t) => {
    const count = 10_000;
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'unaligned-in', 4);
    const output = await createTestTopic(brokers, 'unaligned-out', 4);
    const folder = await mkdtemp(join(tmpdir(), 'weir-unaligned-'));
    cleanups.push(input.remove, output.remove, () => rm(folder, { recursive: true, force: true }));
    await writeChaosInput(brokers, input.topic, 4, count);
    const storage = join(folder, 'checkpoints');
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '1000' };
    const config = {
      parallelism: 2,
      workers: 2,
      batchSize: 64,
      channelCredits: 4,
      network: { debloat: { enabled: false } },
      checkpointing: { interval: '300ms', storage, unaligned: true, alignedCheckpointTimeout: '20ms' },
      restartStrategy: { type: 'none' },
    };

    const faulted = startJobProcess(job, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
    const faultExit = await faulted.exit;
    assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
    const killedAt = /killing the process at after-checkpoint-metadata of checkpoint (\d+)/.exec(faulted.stderr);
    assert.ok(killedAt !== null, faulted.stderr);
    const first = await channelStateOf(storage);
    t.diagnostic(`killed after checkpoint ${killedAt[1]}; latest completed: ${JSON.stringify(first)}`);
    assert.equal(first?.checkpointId, Number(killedAt[1]));
    assert.ok((first?.files ?? 0) > 0, 'the checkpoint the run was killed after holds records in flight (channel state)');

    // Killed again at a random moment after the restored run (which replayed that channel state
    // before new input) completed a checkpoint of its own.
    const second = startJobProcess(job, config, env);
    await waitFor('a checkpoint of the restored run', async () => ((await channelStateOf(storage))?.checkpointId ?? 0) > Number(killedAt[1]), 60_000);
    await sleep(Math.floor(Math.random() * 500));
    second.child.kill('SIGKILL');
    const secondExit = await second.exit;
    assert.match(second.stderr, new RegExp(`starting job "kafka-count" from checkpoint ${killedAt[1]}`), second.stderr);
    t.diagnostic(`second run: ${secondExit.signal ?? `exit ${secondExit.code}`}; latest completed: ${JSON.stringify(await channelStateOf(storage))}`);

    const last = startJobProcess(job, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
  });

  test('an async stage behind the channels: its in-flight calls are its operator state, the records queued before it channel state; SIGKILLs keep the sums exact', async (t) => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-unaligned-async-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    const count = 3000;
    // 2 lookup subtasks of capacity 4 at 10 ms: about 800 records/s, far below the generator.
    const env = { KS_COUNT: String(count), KS_OUTPUT: join(folder, 'out'), SK_LATENCY_MS: '10', SK_CAPACITY: '4' };
    const storage = join(folder, 'checkpoints');
    const config = {
      parallelism: 2,
      workers: 2,
      batchSize: 64,
      network: { debloat: { enabled: false } },
      checkpointing: { interval: '200ms', storage, unaligned: true },
      restartStrategy: { type: 'none' },
    };
    const asyncJob = join(fixtures, 'slow-keyed-sum-job.ts');
    const faulted = startJobProcess(asyncJob, config, { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=3' });
    assert.equal((await faulted.exit).signal, 'SIGKILL', faulted.stderr);
    const killed = await channelStateOf(storage);
    t.diagnostic(`killed after ${JSON.stringify(killed)}`);
    assert.ok((killed?.files ?? 0) > 0, 'the checkpoint the run was killed after holds records in flight (channel state)');
    for (let round = 0; round < 2; round++) {
      const run = startJobProcess(asyncJob, config, env);
      await sleep(600 + Math.floor(Math.random() * 900));
      run.child.kill('SIGKILL');
      await run.exit;
    }
    const last = startJobProcess(asyncJob, config, env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, /starting job "slow-keyed-sum" from checkpoint \d+/);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count), { records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });
  });
});
