/**
 * Savepoints with the exactly-once Kafka sink. A savepoint is reported only after its transactions
 * are committed, and says so on disk; a restore from it (after the job went on, reusing its
 * transactional ids) commits nothing again, so it never mistakes a reused id for lost data.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatBootstrap } from '../../../src/connectors/kafka/bootstrap.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { startJob } from '../../../src/runtime/job-master.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { writeChaosInput } from '../../harness/kafka-count-audit.ts';

test('restoring an old savepoint after its transactional ids were reused: no false data loss', async () => {
  const brokers = testBrokers();
  const input = await createTestTopic(brokers, 'savepoint-in', 2);
  const output = await createTestTopic(brokers, 'savepoint-out', 2);
  const folder = await mkdtemp(join(tmpdir(), 'weir-savepoint-'));
  try {
    await writeChaosInput(brokers, input.topic, 2, 60_000);
    Object.assign(process.env, { KAFKA_BROKERS: formatBootstrap(brokers), KC_INPUT: input.topic, KC_OUTPUT: output.topic, KC_WORK_US: '60' });
    const job = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'kafka-count-job.ts');
    const config = { parallelism: 2, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } };

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
