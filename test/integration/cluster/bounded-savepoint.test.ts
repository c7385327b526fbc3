/**
 * Issue 35: a savepoint of a cluster some of whose tasks have ended (bounded input), on the real
 * broker. An ended task runs no more, so it takes no part, and a task behind it would wait for its
 * barrier for ever: `weir savepoint --cluster` and `weir stop --cluster` are refused at once, naming
 * the ended tasks and the fix (let the job end), never waiting for their --timeout. Nothing was asked
 * of the cluster: it goes on, ends on its own (every member exits 0), and its outputs read back
 * read_committed are exact.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { controlTopicName } from '../../../src/cluster/savepoint-control.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { exitsOnItsOwn } from '../../harness/bounded-cluster.ts';
import { weir } from '../../harness/cli.ts';
import { auditClusterOutputs, clusterBrokersEnv, producePayments, withMemberLogs } from '../../harness/cluster-job.ts';
import { clusterTest, payment } from '../../harness/cluster-test.ts';
import { testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

const boundedJob = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'bounded-cluster-job.ts');

test('a savepoint or a stop of a cluster with ended tasks is refused at once, naming them; the cluster ends on its own, exact', {
  timeout: 300_000,
}, async () => {
  const { cluster, topics, members, member } = await clusterTest('bounded-savepoint');
  const inputs = Array.from({ length: 6000 }, (_, seq) => payment(seq));
  await producePayments(topics.input, inputs);
  // A slow lookup (2 in flight, 25 ms each: about 6 s per task): the source tasks end long before the others.
  const env = { CJ_LOOKUP_MS: '25', CJ_LOOKUP_CAPACITY: '2' };
  const runs = [member({ module: boundedJob, interval: '300ms', env }), member({ module: boundedJob, interval: '300ms', env })];
  await withMemberLogs(members, async () => {
    const endedTask = /payments task \d+ ended: its final checkpoint/;
    await until('a source task ended', async () => (runs.some((run) => endedTask.test(run.stderr())) ? true : undefined), 120_000);
    assert.doesNotMatch(runs.map((run) => run.stderr()).join('\n'), /lookup task \d+ ended/, 'the lookup tasks still run');

    const refused = /a savepoint of cluster "[^"]+" cannot be taken: \d+ of its 48 tasks have ended \(bounded input: [^)]*payments\/\d+/;
    const savepoint = await weir(['savepoint', '--cluster', cluster, '--timeout', '5m'], clusterBrokersEnv());
    assert.notEqual(savepoint.code, 0);
    assert.match(savepoint.stderr, refused);
    assert.match(savepoint.stderr, /let the bounded job end/);
    assert.doesNotMatch(savepoint.stderr, /was not done in/, 'refused at once, not timed out');
    const stop = await weir(['stop', '--cluster', cluster, '--timeout', '5m'], clusterBrokersEnv());
    assert.notEqual(stop.code, 0);
    assert.match(stop.stderr, refused);
    assert.match(stop.stderr, /stop its members with SIGTERM/);
    // Nothing was asked of the cluster: its control topic holds no request.
    const control = await readTopic({ bootstrap: testBrokers(), topic: controlTopicName(cluster), isolation: 'read_uncommitted' }).catch(() => []);
    assert.equal(control.length, 0, 'no savepoint request was appended');

    for (const run of runs) assert.equal(await exitsOnItsOwn(run, 180_000), 0, 'the member exits 0');
    await auditClusterOutputs(topics, inputs, inputs);
  });
});
