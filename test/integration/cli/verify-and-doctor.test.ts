/**
 * `weir verify` catches a duplicated and a missing record and passes a clean topic; it and
 * `weir doctor` report a transaction a test leaves open, and `doctor --abort` clears it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { committableOf, TransactionDriver } from '../../../src/connectors/kafka/transaction-driver.ts';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';

const root = repositoryRoot;

async function writeSeqs(topic: string, seqs: number[], transactionalId: string, commit = true): Promise<void> {
  const brokers = testBrokers();
  const connections = new ClusterConnections(brokers);
  try {
    const driver = new TransactionDriver(connections, { transactionTimeoutMs: 600_000 });
    const open = await driver.initTransaction(transactionalId);
    await driver.send(
      open,
      seqs.map((seq) => ({ topic, partition: seq % 2, key: Buffer.from(`k${seq}`), value: Buffer.from(JSON.stringify({ seq })) })),
    );
    if (commit) await driver.commit(committableOf(open));
  } finally {
    await connections.close();
  }
}

test('weir verify: a duplicated and a missing record fail it; a clean topic passes', async () => {
  const brokers = testBrokers();
  const bad = await createTestTopic(brokers, 'verify-bad', 2);
  const clean = await createTestTopic(brokers, 'verify-clean', 2);
  try {
    await writeSeqs(bad.topic, [0, 1, 2, 3, 3, 4, 6, 7, 8, 9], `${bad.topic}-w`);
    await writeSeqs(clean.topic, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], `${clean.topic}-w`);
    const env = { KAFKA_BROKERS: formatBootstrap(brokers) };

    const failing = await weir(['verify', '--topic', bad.topic, '--field', 'seq', '--expect', '10'], env);
    assert.equal(failing.code, 1);
    assert.match(failing.stdout, /^duplicates: 1 \(3 x2\)$/m);
    assert.match(failing.stdout, /^missing: 1 \(5\)$/m);
    assert.match(failing.stderr, /^weir: .*: 1 duplicated, 1 missing$/m);
    // The hint speaks of what was found, not of open transactions there are none of.
    assert.match(failing.stderr, /^hint: duplicates: the writer was not exactly-once .*; missing records: /m);
    assert.doesNotMatch(failing.stderr, /open transactions hold/);

    const passing = await weir(['verify', '--topic', clean.topic, '--field', 'seq', '--expect', '10'], env);
    assert.equal(passing.code, 0, passing.stderr);
    assert.match(passing.stdout, /^topic .*: 10 records read_committed, identified by seq$/m);
    assert.match(passing.stdout, /^OK$/m);

    const beyond = await weir(['verify', '--topic', clean.topic, '--field', 'seq', '--expect', '5'], env);
    assert.equal(beyond.code, 1, 'ids outside 0..n-1 fail --expect n');
    assert.match(beyond.stdout, /^unexpected: 5 \(/m);
    assert.match(beyond.stderr, /^weir: .*: 5 unexpected$/m);

    const noField = await weir(['verify', '--topic', clean.topic, '--field', 'nope'], env);
    assert.equal(noField.code, 1);
    assert.match(noField.stderr, /has no field "nope"/);
  } finally {
    await bad.remove();
    await clean.remove();
  }
});

test('an open transaction left behind: verify and doctor report it, doctor --abort clears it', async () => {
  const brokers = testBrokers();
  const { topic, remove } = await createTestTopic(brokers, 'doctor', 2);
  const prefix = `${topic}-crashed-job`;
  const env = { KAFKA_BROKERS: formatBootstrap(brokers) };
  try {
    await writeSeqs(topic, [0, 1, 2, 3], `${topic}-w`);
    await writeSeqs(topic, [4, 5], `${prefix}-0-0`, false); // a crashed job's pre-commit, never committed

    const verify = await weir(['verify', '--topic', topic, '--field', 'seq'], env);
    assert.equal(verify.code, 1);
    assert.match(verify.stdout, /^open transactions: [12]$/m);
    assert.match(verify.stdout, /partition \d: producer \d+ \(epoch \d+\) since offset \d+/);

    const doctor = await weir(['doctor', '--prefix', prefix], env);
    assert.equal(doctor.code, 1);
    assert.match(doctor.stdout, /^broker: reachable at /m);
    assert.match(doctor.stdout, /^transaction\.max\.timeout\.ms: \d+/m);
    assert.match(doctor.stdout, new RegExp(`^open transactions under "${prefix}": ${prefix}-0-0$`, 'm'));
    assert.match(doctor.stderr, /^hint: .*--abort/m);

    // Without the job's checkpoints it cannot tell a checkpoint's pre-committed transactions from lingering ones.
    const refused = await weir(['doctor', '--prefix', prefix, '--abort'], env);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^weir: refusing to abort the 1 open transaction\(s\) under /m);
    assert.match(refused.stderr, /^hint: .*--checkpoint-storage .*--fresh aborts them all$/m);
    // No checkpoint storage: this "job" never had one.
    const aborted = await weir(['doctor', '--prefix', prefix, '--abort', '--fresh'], env);
    assert.equal(aborted.code, 0, aborted.stderr);
    assert.match(aborted.stdout, /^aborted 1 lingering transaction$/m);
    const after = await weir(['verify', '--topic', topic, '--field', 'seq', '--expect', '4'], env);
    assert.equal(after.code, 0, after.stdout + after.stderr);

    const noPrefix = await weir(['doctor', '--abort'], env);
    assert.equal(noPrefix.code, 1);
    assert.match(noPrefix.stderr, /--abort needs --prefix/);
  } finally {
    await remove();
  }
});

test('weir doctor --job runs the preflight of a job', async () => {
  const brokers = testBrokers();
  const { topic, remove } = await createTestTopic(brokers, 'doctor-job', 1);
  try {
    const result = await weir(['doctor', '--job', join(root, 'test', 'fixtures', 'jobs', 'kafka-count-job.ts')], {
      KAFKA_BROKERS: formatBootstrap(brokers),
      KC_INPUT: topic,
      KC_OUTPUT: topic,
    });
    assert.equal(result.code, 1);
    assert.match(result.stdout, /^job "kafka-count": \d+ finding\(s\)$/m);
    assert.match(result.stdout, /error: sink "kafka sink \(.*\)" is exactly-once, but checkpointing is off/);
    assert.match(result.stdout, new RegExp(`^  kafka sink \\(${topic}\\): transactional id prefix "weir-${topic}"$`, 'm'), 'the prefix --prefix takes');
  } finally {
    await remove();
  }
});
