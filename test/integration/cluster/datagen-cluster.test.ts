/**
 * Issue 35, point 1: the generator (dataGenSource) runs in cluster mode, one task per split, and
 * writes what one process writes, record for record. The job (datagen-cluster-job.ts: a bounded,
 * rate-limited generator of 4 splits -> keyBy(key) -> running total per key -> an exactly-once Kafka
 * sink) runs once as one process and once as three members side by side; one member that runs a
 * generator task is SIGKILLed while the generator is under way, and the others take its tasks over
 * (each generator task restored from its checkpoint record: the split's position is its operator
 * state). Read back read_committed, both outputs are per key the same totals in the same order,
 * and both are what the input makes them (every number once: no gap, no duplicate).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { DATAGEN_KEYS, type DataGenTotal } from '../../fixtures/jobs/datagen-cluster-job.ts';
import { createTestTopic, testBrokers } from '../../harness/kafka.ts';
import { assertSameOutput, countOf, outputComplete, readByKey, startBoth, withLogs } from '../../harness/same-output.ts';

const module = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'datagen-cluster-job.ts');
const COUNT = 4000;

/** The tasks of a member's latest generation (its log line `generation N, M tasks: stage/task, ...`). */
const lastTasks = (stderr: string) => [...stderr.matchAll(/generation \d+, \d+ tasks: ([^\n]*)/g)].at(-1)?.[1] ?? '';

/** Per key, the running totals of the generator's default records 0 .. count - 1, in number order. */
function expectedTotals(count: number): Map<string, string[]> {
  const totals = new Map<string, number>();
  const out = new Map<string, string[]>();
  for (let seq = 0; seq < count; seq++) {
    const key = `key-${seq % DATAGEN_KEYS}`;
    const total = (totals.get(key) ?? 0) + (seq % 10) + 1;
    totals.set(key, total);
    const record: DataGenTotal = { seq, key, total };
    out.set(key, [...(out.get(key) ?? []), JSON.stringify(record)]);
  }
  return out;
}

test('the generator in cluster mode: a task per split, the same totals as one process, exactly once across a member SIGKILL', {
  timeout: 300_000,
}, async () => {
  const brokers = testBrokers();
  const [one, cluster] = await Promise.all([createTestTopic(brokers, 'datagen-one', 3), createTestTopic(brokers, 'datagen-cluster', 3)]);
  const env = { DG_COUNT: String(COUNT), DG_RATE: '300' };
  const both = await startBoth({
    module,
    brokers: { oneProcess: brokers, cluster: brokers },
    oneProcessEnv: { ...env, DG_OUT: one.topic },
    clusterEnv: { ...env, DG_OUT: cluster.topic },
    // 4 generator tasks and 8 totals tasks over three members.
    args: ['--max-parallelism', '8'],
    label: 'datagen',
  });
  try {
    await withLogs(both, async () => {
      // A member that runs a generator task, SIGKILLed once part of the output is committed.
      const victim = await both.watch(
        both.members,
        'a member running a generator task, with output committed',
        (async () => {
          for (;;) {
            const held = countOf(await readByKey(brokers, cluster.topic).catch(() => new Map()));
            const runner = both.members.find((member) => /generator\//.test(lastTasks(member.stderr())));
            if (held >= COUNT / 5 && runner !== undefined) return runner;
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        })(),
      );
      const killedAt = countOf(await readByKey(brokers, cluster.topic));
      const moved = [...lastTasks(victim.stderr()).matchAll(/generator\/\d+/g)].map((match) => match[0]);
      const survivors = both.members.filter((member) => member !== victim);
      const before = survivors.map((member) => member.stderr().length);
      victim.child.kill('SIGKILL');
      await victim.exited;
      assert.ok(killedAt < COUNT, `the member was killed while the generator was under way (${killedAt} of ${COUNT} committed)`);
      const count = (topic: string) => async () => countOf(await readByKey(brokers, topic));
      await Promise.all([
        outputComplete('the one-process output', count(one.topic), COUNT, both.signal),
        outputComplete('the cluster output', count(cluster.topic), COUNT, both.signal),
      ]);
      const oneProcess = await readByKey(brokers, one.topic);
      const members = await readByKey(brokers, cluster.topic);
      assertSameOutput('the generator', oneProcess, members, true);
      assertSameOutput('the generator against its input', expectedTotals(COUNT), members, true);
      // Four generator tasks (one per split); the survivors took the killed member's over, each restored from its checkpoint record.
      assert.match(victim.stderr(), /stage "generator", 4 tasks/);
      assert.ok(moved.length > 0, 'the killed member ran a generator task');
      const after = survivors.map((member, index) => lastTasks(member.stderr().slice(before[index])));
      for (const task of moved)
        assert.ok(
          after.some((tasks) => tasks.split(', ').includes(task)),
          `a survivor took ${task} over (${after.join(' | ')})`,
        );
    });
  } finally {
    await both.stop();
    await one.remove().catch(() => {});
    await cluster.remove().catch(() => {});
  }
});
