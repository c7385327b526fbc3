/**
 * Savepoints with the exactly-once Kafka sink. A savepoint is reported only after its transactions
 * are committed, and says so on disk; a restore from it (after the job went on, reusing its
 * transactional ids) commits nothing again, so it never mistakes a reused id for lost data. And
 * because its transactions are committed, a job resumes from its latest savepoint when that is
 * newer than its latest checkpoint: resuming from the checkpoint would commit records twice.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { startWeirRun } from '../../harness/weir-run.ts';

test('restoring an old savepoint after its transactional ids were reused: no false data loss', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'savepoint-in', 2);
  const output = await createTestTopic(brokers, 'savepoint-out', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-savepoint-'));
  try {
    await writeChaosInput(brokers, input.topic, 2, 60_000);
    Object.assign(process.env, { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '120' });
    const job = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
    // Small batches: a barrier waits behind less of the slow function's work, so checkpoints come often.
    const config = { parallelism: 2, workers: 2, batchSize: 64, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } };

    let checkpoints = 0;
    const first = await startJob({ job, config, onEvent: (event) => void (event.type === 'checkpoint-completed' && checkpoints++) });
    while (checkpoints < 2) await sleep(10);
    const savepoint = await first.triggerSavepoint();
    assert.ok(existsSync(join(savepoint.location.path, '_committed')), 'the savepoint records that its transactions are committed');
    const result = await first.result; // the job goes on to its end; many checkpoints reuse the ids
    assert.ok((result.lastCheckpointId ?? 0) > savepoint.checkpointId + 5);
    const afterFirst = (await readTopic({ bootstrap: brokers, topic: output.topic })).length;
    assert.equal(afterFirst, 60_000);

    const again = await startJob({ job, config, fromSavepoint: savepoint.location.path });
    await again.result;
    // Everything after the savepoint is read again (that is what restoring an old savepoint means).
    assert.ok((await readTopic({ bootstrap: brokers, topic: output.topic })).length > afterFirst);
  } finally {
    await input.remove();
    await output.remove();
    await rm(folder, { recursive: true, force: true });
  }
});

test('restoring an older retained checkpoint (--from-savepoint chk-N) after its ids were reused: no false data loss, a warning of the duplicates', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'old-checkpoint-in', 2);
  const output = await createTestTopic(brokers, 'old-checkpoint-out', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-old-checkpoint-'));
  try {
    await writeChaosInput(brokers, input.topic, 2, 60_000);
    Object.assign(process.env, { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '120' });
    const job = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
    const config = { parallelism: 2, workers: 2, batchSize: 64, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints'), retained: 1000 } };

    const result = await (await startJob({ job, config })).result; // to its end: many checkpoints reuse the pool's ids
    // A pool holds about maxConcurrent + 2 ids a subtask: by checkpoint 6, checkpoint 3's ids have been reused.
    assert.ok((result.lastCheckpointId ?? 0) >= 6, `${result.lastCheckpointId} checkpoints`);
    assert.equal((await readTopic({ bootstrap: brokers, topic: output.topic })).length, 60_000);

    const lines: string[] = [];
    const old = join(folder, 'checkpoints', 'chk-3');
    const again = await startJob({ job, config, fromSavepoint: old, log: (line) => lines.push(line) });
    await again.result; // a false DATA_LOSS would reject here
    assert.ok(
      lines.some((line) => /restoring checkpoint 3, older than the latest completed one .*written again/.test(line)),
      lines.join('\n'),
    );
    // Everything after checkpoint 3 is read and written again: what restoring an old checkpoint means.
    assert.ok((await readTopic({ bootstrap: brokers, topic: output.topic })).length > 60_000);
  } finally {
    await input.remove();
    await output.remove();
    await rm(folder, { recursive: true, force: true });
  }
});

test('a job resumes from a savepoint newer than its latest checkpoint: after a crash, and after stop --savepoint; every record once', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'savepoint-resume-in', 2);
  const output = await createTestTopic(brokers, 'savepoint-resume-out', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-savepoint-resume-'));
  const count = 120_000;
  try {
    await writeChaosInput(brokers, input.topic, 2, count);
    const env = { ...process.env, KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '100' };
    const job = join(repositoryRoot, 'test', 'fixtures', 'jobs', 'kafka-count-job.ts');
    // Checkpoints every 2 s: the savepoint is taken, and the job killed, before the next one completes.
    const args = [
      job,
      '--log-level',
      'debug',
      '--parallelism',
      '2',
      '--workers',
      '2',
      '--checkpoint-interval',
      '2s',
      '--checkpoint-storage',
      join(folder, 'checkpoints'),
      '--ui-port',
      '0',
    ];

    const first = startWeirRun(args, env);
    await first.waitFor(/checkpoint \d+ completed/);
    const url = await first.url();
    const savepoint = await weir(['savepoint', '--url', url]);
    assert.equal(savepoint.code, 0, savepoint.stderr);
    first.child.kill('SIGKILL');
    await first.exited;
    const savepointId = Number(/^savepoint (\d+):/m.exec(savepoint.stdout)?.[1]);
    assert.ok(savepointId > 0, savepoint.stdout);

    const second = startWeirRun(args, env);
    // Never from a checkpoint older than the savepoint (a checkpoint that completed after it, before the kill, is as good).
    const secondFrom = Number((await second.waitFor(/starting job "kafka-count" from (?:checkpoint|savepoint) (\d+)/))[1]);
    assert.ok(secondFrom >= savepointId, `resumed from ${secondFrom}, older than savepoint ${savepointId}`);
    const secondUrl = await second.url();
    await sleep(500);
    const stop = await weir(['stop', '--savepoint', '--url', secondUrl]);
    assert.equal(stop.code, 0, `${stop.stderr}\n${second.stderr()}`);
    assert.equal(await second.exited, 0, second.stderr());
    const stopId = Number(/^stopped with savepoint (\d+):/m.exec(stop.stdout)?.[1]);
    assert.ok(stopId > savepointId, stop.stdout);

    const third = startWeirRun(args, env);
    // The stop's savepoint is the latest snapshot, and the start names it as a savepoint.
    const thirdFrom = Number((await third.waitFor(/starting job "kafka-count" from savepoint (\d+)/))[1]);
    assert.ok(thirdFrom >= stopId, `resumed from ${thirdFrom}, older than savepoint ${stopId}`);
    assert.equal(await third.exited, 0, third.stderr());

    assert.deepEqual(await auditCounts(brokers, output.topic, count), exactCountAudit(count));
  } finally {
    await input.remove();
    await output.remove();
    await rm(folder, { recursive: true, force: true });
  }
});
