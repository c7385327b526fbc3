/**
 * What cluster mode refuses before a member joins its group, each with one error naming the
 * setting and the fix: a job without exactly-once checkpoints, a checkpoint interval the brokers'
 * transaction.max.timeout.ms cannot cover (the broker would abort a task's transaction: data lost),
 * incremental checkpoints (not built for cluster mode yet), and an exactly-once sink that neither
 * writes into a task's transaction nor is a two-phase-commit sink.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { weir } from '../../harness/cli.ts';
import { clusterJobModule, clusterJobTopics } from '../../harness/cluster-job.ts';
import { bootstrapList, testBrokers } from '../../harness/kafka.ts';

const brokers = testBrokers();
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => {});
});

test('cluster mode refuses --fresh, no checkpointing, an interval the broker cannot hold a transaction for, incremental checkpoints, local recovery, and an exactly-once sink that is neither in the task transaction nor two-phase-commit', async () => {
  const topics = await clusterJobTopics();
  cleanups.push(topics.remove);
  const folder = await mkdtemp(join(tmpdir(), 'weir-cluster-refusals-'));
  cleanups.push(() => rm(folder, { recursive: true, force: true }));
  const env = { KAFKA_BROKERS: bootstrapList(brokers).join(','), CJ_INPUT: topics.input, CJ_TOTALS: topics.totals, CJ_WINDOWS: topics.windows };

  const none = await weir(['run', clusterJobModule, '--cluster', 'weir-test-refused', '--no-ui'], env);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /cluster mode runs exactly-once checkpoints, and job "cluster-job" has none/);
  assert.match(none.stderr, /--checkpoint-interval and --checkpoint-storage/);

  const fresh = await weir(['run', clusterJobModule, '--cluster', 'weir-test-refused', '--fresh', '--no-ui'], env);
  assert.equal(fresh.code, 1);
  assert.match(fresh.stderr, /--fresh is not built for cluster mode/);

  // The test broker's transaction.max.timeout.ms is 15 minutes: a 6 minute interval needs 18.
  const long = await weir(
    ['run', clusterJobModule, '--cluster', 'weir-test-refused', '--checkpoint-interval', '6m', '--checkpoint-storage', folder, '--no-ui'],
    env,
  );
  assert.equal(long.code, 1, long.stderr);
  assert.match(long.stderr, /checkpointing\.interval 360000 ms is too long for the brokers' transaction\.max\.timeout\.ms/);
  assert.match(long.stderr, /set checkpointing\.interval \(--checkpoint-interval\) to at most \d+ ms/);

  // The input has 12 partitions, so 12 source tasks: more than a maxParallelism of 4 allows (as one process refuses it).
  const narrow = await weir(
    [
      'run',
      clusterJobModule,
      '--cluster',
      'weir-test-refused',
      '--checkpoint-interval',
      '1s',
      '--checkpoint-storage',
      folder,
      '--max-parallelism',
      '4',
      '--no-ui',
    ],
    env,
  );
  assert.equal(narrow.code, 1, narrow.stderr);
  assert.match(narrow.stderr, /stage "[^"]+" has 12 tasks \(one per input partition\), above maxParallelism 4/);
  assert.match(narrow.stderr, /set maxParallelism \(--max-parallelism\) to at least 12/);

  // Incremental checkpoints share files across checkpoints; a cluster task keeps only its latest.
  const incremental = await weir(
    [
      'run',
      clusterJobModule,
      '--cluster',
      'weir-test-refused',
      '--checkpoint-interval',
      '1s',
      '--checkpoint-storage',
      folder,
      '--incremental-checkpoints',
      '--no-ui',
    ],
    env,
  );
  assert.equal(incremental.code, 1, incremental.stderr);
  assert.match(incremental.stderr, /checkpointing\.incremental is not built for cluster mode yet/);

  // Local recovery keeps copies where a task ran; a cluster task moves between members.
  const local = await weir(
    ['run', clusterJobModule, '--cluster', 'weir-test-refused', '--checkpoint-interval', '1s', '--checkpoint-storage', folder, '--local-recovery', '--no-ui'],
    env,
  );
  assert.equal(local.code, 1, local.stderr);
  assert.match(local.stderr, /checkpointing\.localRecovery is not built for cluster mode yet/);
  assert.match(local.stderr, /drop checkpointing\.localRecovery \(--local-recovery\) for cluster mode/);

  // An exactly-once sink that neither writes into the task's Kafka transaction nor is a two-phase-commit
  // sink (a file sink or the PostgreSQL sink runs: two-phase-commit-sinks.test.ts): refused by its uid.
  const custom = await weir(
    [
      'run',
      join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'cluster-2pc-job.ts'),
      '--cluster',
      'weir-test-refused',
      '--checkpoint-interval',
      '1s',
      '--checkpoint-storage',
      folder,
      '--no-ui',
    ],
    { ...env, CJ_SINK: 'custom' },
  );
  assert.equal(custom.code, 1, custom.stderr);
  assert.match(
    custom.stderr,
    /cluster mode cannot run sink "totals-sink" \(custom sink\): it is exactly-once, but it neither writes into a task's Kafka transaction nor is a two-phase-commit sink/,
  );
  assert.match(custom.stderr, /a two-phase-commit sink \(twoPhaseCommitSink, fileSink, postgresSink\); else give it deliveryGuarantee 'at-least-once'/);
});
