/**
 * Incremental checkpoints on the disk state backend (stateBackend: 'disk' with
 * checkpointing.incremental, issue 34) in real jobs: the lmdb tables mark the keys they change, a
 * checkpoint writes those keys' values at the barrier from the lmdb read transaction taken there,
 * and a restore reads the chain (the full snapshot, then the changes, oldest first) at any
 * parallelism. The whole process is SIGKILLed at random moments, and a job is rescaled 1 -> 3 -> 2
 * through checkpoints that are chains (the process frozen with SIGSTOP once the latest completed
 * checkpoint holds changes, then killed). The output must hold every record exactly once with exact
 * running sums or counts: committed files (test/harness/keyed-sum-audit.ts), and a Kafka topic read
 * read_committed from the real broker (test/harness/kafka-count-audit.ts).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckpointMetadata } from '../../../src/checkpoint/storage/checkpoint-metadata.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { assertChainsIntact, completedCheckpoints } from '../../harness/checkpoint-chains.ts';
import { type JobProcess, startJobProcess, waitFor } from '../../harness/job-process.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { auditKeyedSum, readCommittedRecords } from '../../harness/keyed-sum-audit.ts';

const jobs = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs');
const configFor = (folder: string, parallelism: number, stateBackend: 'heap' | 'disk' = 'disk') => ({
  parallelism,
  workers: 2,
  stateBackend,
  stateDir: join(folder, 'state'),
  checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints'), incremental: true, retained: 2 },
  restartStrategy: { type: 'fixed-delay' as const, attempts: 3, delay: 100 },
});
const exact = (count: number) => ({ records: count, duplicates: 0, missing: 0, unexpected: 0, wrongSums: [] });

/** How many subtasks of operator `uid` a checkpoint holds as a chain (a full snapshot and changes on it), and of how many. */
function chainsOf(metadata: CheckpointMetadata, uid: string): { chains: number; subtasks: number } {
  const subtasks = metadata.operators.find((operator) => operator.uid === uid)?.subtasks ?? [];
  return { chains: subtasks.filter((subtask) => (subtask.keyedChanges?.length ?? 0) > 0).length, subtasks: subtasks.length };
}

/** How many subtasks of operator `uid` a checkpoint holds as a chain on a base written beside an earlier chain (a `.keyed-base` file). */
function basesBesideOf(metadata: CheckpointMetadata, uid: string): number {
  const subtasks = metadata.operators.find((operator) => operator.uid === uid)?.subtasks ?? [];
  return subtasks.filter((subtask) => subtask.keyed?.path.endsWith('.keyed-base') === true).length;
}

/** The latest completed checkpoint, if any. */
function latest(folder: string): { id: number; metadata: CheckpointMetadata } | undefined {
  const all = completedCheckpoints(folder);
  const id = Math.max(...all.keys());
  return Number.isFinite(id) ? { id, metadata: all.get(id) as CheckpointMetadata } : undefined;
}

/**
 * Kills `run` once the latest completed checkpoint, later than `after`, holds operator `uid` of
 * `parallelism` subtasks with at least one as a chain: the process is frozen (SIGSTOP) so no later
 * checkpoint completes, checked again (else woken), then SIGKILLed. Returns that checkpoint's id:
 * the one the next run restores.
 */
async function killAtChain(
  run: JobProcess,
  folder: string,
  uid: string,
  parallelism: number,
  after: number,
  holds: (metadata: CheckpointMetadata) => boolean = (metadata) => chainsOf(metadata, uid).chains > 0,
): Promise<number> {
  const isChain = () => {
    const last = latest(folder);
    if (last === undefined || last.id <= after) return undefined;
    return holds(last.metadata) && chainsOf(last.metadata, uid).subtasks === parallelism ? last.id : undefined;
  };
  for (;;) {
    await waitFor(`a completed checkpoint after ${after} holding changes of "${uid}"`, () => isChain() !== undefined || run.child.exitCode !== null, 60_000);
    assert.equal(run.child.exitCode, null, `the run ended before a checkpoint with changes: ${run.stderr}`);
    run.child.kill('SIGSTOP');
    await sleep(50);
    const id = isChain();
    if (id !== undefined) {
      run.child.kill('SIGKILL');
      await run.exit;
      return id;
    }
    run.child.kill('SIGCONT');
  }
}

describe('incremental checkpoints on the disk backend under failures', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });
  const newFolder = async () => {
    const folder = await mkdtemp(join(tmpdir(), 'weir-disk-incremental-'));
    cleanups.push(() => rm(folder, { recursive: true, force: true }));
    return folder;
  };

  test('SIGKILLs at random moments and after "checkpoint complete": output exact, checkpoints written as changes, no shared file deleted while needed', async () => {
    const folder = await newFolder();
    const count = 50_000;
    const keyedSum = join(jobs, 'keyed-sum-job.ts');
    const env = { KS_OUTPUT: join(folder, 'out'), KS_COUNT: String(count), KS_RATE: '15000', KS_KEYS: '5000' };
    let sawChanges = false;
    const watch = setInterval(() => {
      for (const metadata of completedCheckpoints(folder).values()) if (chainsOf(metadata, 'running-sum').chains > 0) sawChanges = true;
    }, 50);
    try {
      const faulted = startJobProcess(keyedSum, configFor(folder, 2), { ...env, WEIR_FAULT: 'after-checkpoint-metadata:>=6' });
      const faultExit = await faulted.exit;
      assert.equal(faultExit.signal, 'SIGKILL', faulted.stderr);
      assertChainsIntact(folder);
      for (let round = 0; round < 3; round++) {
        const run = startJobProcess(keyedSum, configFor(folder, 2), env);
        await sleep(700 + Math.floor(Math.random() * 900));
        run.child.kill('SIGKILL');
        await run.exit;
        assertChainsIntact(folder);
      }
      const last = startJobProcess(keyedSum, configFor(folder, 2), env);
      const exit = await last.exit;
      assert.equal(exit.code, 0, last.stderr);
      assert.match(last.stderr, /starting job "keyed-sum" from checkpoint \d+/);
    } finally {
      clearInterval(watch);
    }
    assert.ok(sawChanges, 'some checkpoint was written as changes on an earlier one (keyedChanges)');
    assertChainsIntact(folder);
    assert.deepEqual(auditKeyedSum(join(folder, 'out'), count, 5000), exact(count));
    assert.deepEqual(
      readdirSync(join(folder, 'state'), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()),
      [],
      'each task deletes its working folder when it ends',
    );
  });

  test('bases written beside the chain (checkpointing.incrementalMaxChanges 2): killed at a checkpoint whose chain starts with one, restored at 2 and rescaled to 3: output exact', async () => {
    const folder = await newFolder();
    const count = 60_000;
    const keyedSum = join(jobs, 'keyed-sum-job.ts');
    const out = join(folder, 'out');
    const env = { KS_OUTPUT: out, KS_COUNT: String(count), KS_RATE: '12000', KS_KEYS: '5000' };
    const config = (parallelism: number) => {
      const base = configFor(folder, parallelism);
      return { ...base, checkpointing: { ...base.checkpointing, incrementalMaxChanges: 2 } };
    };
    const onBase = (metadata: CheckpointMetadata) => basesBesideOf(metadata, 'running-sum') > 0 && chainsOf(metadata, 'running-sum').chains > 0;
    const first = startJobProcess(keyedSum, config(2), env);
    const fromFirst = await killAtChain(first, folder, 'running-sum', 2, 0, onBase);
    assertChainsIntact(folder);
    const second = startJobProcess(keyedSum, config(2), env);
    const fromSecond = await killAtChain(second, folder, 'running-sum', 2, fromFirst, onBase);
    assert.match(second.stderr, new RegExp(`starting job "keyed-sum" from checkpoint ${fromFirst}\\b`));
    assertChainsIntact(folder);
    assert.ok(readCommittedRecords(out).length < count, 'the second run stopped midway');
    const rescaled = startJobProcess(keyedSum, config(3), env);
    const exit = await rescaled.exit;
    assert.equal(exit.code, 0, rescaled.stderr);
    assert.match(rescaled.stderr, new RegExp(`starting job "keyed-sum" from checkpoint ${fromSecond}\\b`));
    assertChainsIntact(folder);
    assert.deepEqual(auditKeyedSum(out, count, 5000), exact(count));
  });

  test('after a restart the first checkpoint adds to the restored chain (no full snapshot), and a restore through such a chain is exact', async () => {
    const folder = await newFolder();
    const count = 60_000;
    const keyedSum = join(jobs, 'keyed-sum-job.ts');
    const out = join(folder, 'out');
    const env = { KS_OUTPUT: out, KS_COUNT: String(count), KS_RATE: '12000', KS_KEYS: '5000' };
    // Every checkpoint kept, so the first one of the second run can be looked at.
    const config = () => {
      const base = configFor(folder, 2);
      return { ...base, checkpointing: { ...base.checkpointing, retained: 1000 } };
    };
    const fromFirst = await killAtChain(startJobProcess(keyedSum, config(), env), folder, 'running-sum', 2, 0);
    const second = startJobProcess(keyedSum, config(), env);
    const fromSecond = await killAtChain(second, folder, 'running-sum', 2, fromFirst);
    assert.match(second.stderr, new RegExp(`starting job "keyed-sum" from checkpoint ${fromFirst}\\b`));
    const all = completedCheckpoints(folder);
    const firstAfter = Math.min(...[...all.keys()].filter((id) => id > fromFirst));
    const subtasks = (all.get(firstAfter) as CheckpointMetadata).operators.find((operator) => operator.uid === 'running-sum')?.subtasks ?? [];
    assert.equal(subtasks.length, 2);
    for (const subtask of subtasks) {
      assert.ok((subtask.keyedChanges?.length ?? 0) > 0, `checkpoint ${firstAfter}, the first after the restart, adds to a chain`);
      assert.ok((subtask.keyed?.checkpoint ?? firstAfter) <= fromFirst, `its chain starts in the restored checkpoint ${fromFirst} or before`);
    }
    assertChainsIntact(folder);
    const last = startJobProcess(keyedSum, config(), env);
    const exit = await last.exit;
    assert.equal(exit.code, 0, last.stderr);
    assert.match(last.stderr, new RegExp(`starting job "keyed-sum" from checkpoint ${fromSecond}\\b`));
    assert.deepEqual(auditKeyedSum(out, count, 5000), exact(count));
  });

  test('rescale 1 -> 3 -> 2 through checkpoints that are chains (5,000 keys, file sink): output exact', async () => {
    const folder = await newFolder();
    const count = 60_000;
    const keyedSum = join(jobs, 'keyed-sum-job.ts');
    const out = join(folder, 'out');
    const env = { KS_OUTPUT: out, KS_COUNT: String(count), KS_RATE: '12000', KS_KEYS: '5000' };

    const atOne = startJobProcess(keyedSum, configFor(folder, 1), env);
    const fromOne = await killAtChain(atOne, folder, 'running-sum', 1, 0);
    const atThree = startJobProcess(keyedSum, configFor(folder, 3), env);
    await waitFor('committed output at parallelism 3', () => existsSync(out) && readCommittedRecords(out).length > 0, 60_000);
    const fromThree = await killAtChain(atThree, folder, 'running-sum', 3, fromOne);
    assert.match(atThree.stderr, new RegExp(`starting job "keyed-sum" from checkpoint ${fromOne}\\b`));
    assertChainsIntact(folder);
    assert.ok(readCommittedRecords(out).length < count, 'the run at parallelism 3 stopped midway');

    const atTwo = startJobProcess(keyedSum, configFor(folder, 2), env);
    const exit = await atTwo.exit;
    assert.equal(exit.code, 0, atTwo.stderr);
    assert.match(atTwo.stderr, new RegExp(`starting job "keyed-sum" from checkpoint ${fromThree}\\b`));
    assert.deepEqual(auditKeyedSum(out, count, 5000), exact(count));
  });

  test('rescale 1 -> 3 -> 2 through checkpoints that are chains (Kafka in and out, exactly-once): the output read read_committed is exact', async () => {
    const brokers = testBrokers();
    const input = await createTestTopic(brokers, 'disk-incremental-in', 6);
    const output = await createTestTopic(brokers, 'disk-incremental-out', 6);
    cleanups.push(input.remove, output.remove);
    const folder = await newFolder();
    const count = 60_000;
    await writeChaosInput(brokers, input.topic, 6, count);
    const kafkaCount = join(jobs, 'kafka-count-job.ts');
    const env = { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '60' };

    const atOne = startJobProcess(kafkaCount, configFor(folder, 1), env);
    const fromOne = await killAtChain(atOne, folder, 'count', 1, 0);
    const atThree = startJobProcess(kafkaCount, configFor(folder, 3), env);
    const fromThree = await killAtChain(atThree, folder, 'count', 3, fromOne);
    assert.match(atThree.stderr, new RegExp(`starting job "kafka-count" from checkpoint ${fromOne}\\b`));
    assertChainsIntact(folder);

    const atTwo = startJobProcess(kafkaCount, configFor(folder, 2), env);
    const exit = await atTwo.exit;
    assert.equal(exit.code, 0, atTwo.stderr);
    assert.match(atTwo.stderr, new RegExp(`starting job "kafka-count" from checkpoint ${fromThree}\\b`));
    assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
  });

  test('incremental checkpoints move the job from the heap backend at 2 to the disk backend at 3 and back to the heap at 1; a savepoint of the disk backend is full and self-contained: output exact', async () => {
    const folder = await newFolder();
    const count = 60_000;
    const keyedSum = join(jobs, 'keyed-sum-job.ts');
    const out = join(folder, 'out');
    const env = { KS_OUTPUT: out, KS_COUNT: String(count), KS_RATE: '12000', KS_KEYS: '5000' };

    const onHeap = startJobProcess(keyedSum, configFor(folder, 2, 'heap'), env);
    const fromHeap = await killAtChain(onHeap, folder, 'running-sum', 2, 0);
    const onDisk = startJobProcess(keyedSum, configFor(folder, 3, 'disk'), env);
    const fromDisk = await killAtChain(onDisk, folder, 'running-sum', 3, fromHeap);
    assert.match(onDisk.stderr, new RegExp(`starting job "keyed-sum" from checkpoint ${fromHeap}\\b`));

    // The disk backend's savepoint (taken at parallelism 3 from the heap chain it restored): one full snapshot per subtask.
    Object.assign(process.env, env);
    const withSavepoint = await startJob({ job: keyedSum, config: configFor(folder, 3, 'disk'), log: () => {} });
    await waitFor('more committed output before the savepoint', () => readCommittedRecords(out).length > 0, 60_000);
    const savepoint = await withSavepoint.stopWithSavepoint();
    await withSavepoint.result;
    const metadata = JSON.parse(readFileSync(join(savepoint.location.path, '_metadata'), 'utf8')) as CheckpointMetadata;
    const sums = metadata.operators.find((operator) => operator.uid === 'running-sum');
    assert.equal(sums?.subtasks.length, 3);
    for (const subtask of sums?.subtasks ?? []) {
      assert.equal(subtask.keyedChanges, undefined, 'a savepoint holds no changes');
      assert.equal(subtask.keyed?.checkpoint, undefined, "a savepoint names no other checkpoint's file");
    }
    assert.ok(fromDisk > fromHeap);

    const backOnHeap = startJobProcess(keyedSum, { ...configFor(folder, 1, 'heap') }, env);
    const exit = await backOnHeap.exit;
    assert.equal(exit.code, 0, backOnHeap.stderr);
    // The savepoint is newer than every checkpoint: the job resumes from it.
    assert.match(backOnHeap.stderr, new RegExp(`starting job "keyed-sum" from savepoint ${savepoint.checkpointId}\\b`));
    assert.deepEqual(auditKeyedSum(out, count, 5000), exact(count));
  });
});
