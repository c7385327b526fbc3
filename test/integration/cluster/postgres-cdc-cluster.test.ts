/**
 * Issue 35, point 1: the PostgreSQL CDC source runs in cluster mode, against a real PostgreSQL. Its
 * replication slot is one stream, so its stage has one task (one split: the slot), whichever member
 * owns it; the keyed count and the exactly-once PostgreSQL sinks after the keyBy run as a task per
 * key group (test/fixtures/jobs/postgres-cdc-job.ts, unchanged from the one-process exactly-once
 * test). Three members read the initial snapshot and a writer's inserts, updates and deletes; the
 * member that owns the source task is SIGKILLed (its walsender ends with its socket) and the task
 * starts on a survivor from its checkpoint record (the slot, the phase and the LSN: the split's
 * operator state); the slot's position moves only when a checkpoint holding it has committed, so
 * the new owner replays exactly what no committed checkpoint holds. The audit is the one-process
 * test's (postgres-source-exactly-once.test.ts): every committed change once, in order per key,
 * and the mirror equals the table, so the cluster's output is what one process writes.
 *
 * The second case: a snapshot emitted over several polls (PGC_BUFFERED rows at a time, each FETCH
 * held 200 ms), so a checkpoint comes while part of it is out. One process declines such a
 * checkpoint and takes the next; a cluster task has no coordinator to take the next one, so its
 * source holds the barrier until the snapshot is out, and the checkpoint then holds all of it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { POSTGRES_CDC_TABLES } from '../../fixtures/jobs/postgres-cdc-job.ts';
import { stopMember, withMemberLogs } from '../../harness/cluster-job.ts';
import { clusterTest } from '../../harness/cluster-test.ts';
import { auditCdc, CdcWriter, freshCdcTables } from '../../harness/postgres-cdc-writer.ts';
import { type PostgresTestServer, startPostgres } from '../../harness/postgres-server.ts';
import { until, type WeirRun } from '../../harness/weir-run.ts';

const module = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'postgres-cdc-job.ts');

/** The tasks of a member's latest generation (its log line `generation N, M tasks: stage/task, ...`). */
const lastTasks = (run: WeirRun) => ([...run.stderr().matchAll(/generation \d+, \d+ tasks: ([^\n]*)/g)].at(-1)?.[1] ?? '').split(', ');

describe('the PostgreSQL CDC source in cluster mode', () => {
  let server: PostgresTestServer;
  before(async () => {
    // 4 keyed tasks, each with two exactly-once PostgreSQL sinks: prepared transactions of several checkpoints each.
    server = await startPostgres({ maxPreparedTransactions: 40 });
  });
  after(async () => {
    await server?.stop();
  });

  const logRows = async () => Number((await server.query<{ rows: string }>('SELECT count(*) AS rows FROM cdc_log'))[0]?.rows);

  /** Fresh tables, no slot, and `rows` rows for the snapshot. */
  async function seeded(seed: number, rows: number): Promise<CdcWriter> {
    await freshCdcTables(server, POSTGRES_CDC_TABLES);
    const writer = new CdcWriter(seed);
    await writer.seed(server, rows);
    return writer;
  }

  /** Three members; `env` for each. */
  async function start(name: string, env: Record<string, string>) {
    const scaffold = await clusterTest(name);
    const member = () => scaffold.member({ module, interval: '300ms', env: { PGC_URL: server.connectionString, ...env }, args: ['--max-parallelism', '4'] });
    return { scaffold, member, members: [member(), member(), member()] };
  }

  /** Runs `fn` (a failure names the members' last lines), then SIGKILLs every member: the next case's slot and tables are not theirs. */
  async function story(members: WeirRun[], fn: () => Promise<void>): Promise<void> {
    try {
      await withMemberLogs(members, fn);
    } finally {
      await Promise.all(members.map(stopMember));
    }
  }

  /** Waits until cdc_log holds `total` rows, then a moment more (a duplicate would show), and audits. */
  async function settleAndAudit(writer: CdcWriter) {
    const total = writer.changeCount;
    await until('every committed change in cdc_log', async () => ((await logRows()) >= total ? true : undefined), 120_000);
    await sleep(1500);
    return { audit: await auditCdc(server, writer.expected), total };
  }

  test('one source task; its member SIGKILLed while changes stream: every change once, in order per key, the mirror equals the table', {
    timeout: 300_000,
  }, async () => {
    const writer = await seeded(351, 30);
    const { scaffold, member, members } = await start('pg-cdc', {});
    await story(scaffold.members, async () => {
      await until(
        'the slot, once the snapshot is read',
        async () => ((await server.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'cdc_slot'")).length > 0 ? true : undefined),
        120_000,
      );
      assert.match(members[0]?.stderr() ?? '', /stage "cdc", 1 tasks/);
      const writing = writer.write(server.connectionString, 300, 60);
      // The member that owns the source task, once changes after the snapshot are in the log.
      const owner = await until(
        'the source task running, with changes logged',
        async () => ((await logRows()) >= 60 ? members.find((run) => lastTasks(run).includes('cdc/0')) : undefined),
        120_000,
      );
      const [loggedAtKill, writtenAtKill] = [await logRows(), writer.changeCount];
      owner.child.kill('SIGKILL');
      await owner.exited;
      const others = members.filter((run) => run !== owner);
      const before = others.map((run) => run.stderr().length);
      others.push(member()); // a member joins as the others take the source task over
      await until(
        'another member starting the source task from its checkpoint',
        async () => (others.some((run, index) => /cdc task 0 started from checkpoint \d+/.test(run.stderr().slice(before[index] ?? 0))) ? true : undefined),
        120_000,
      );
      await writing;
      const { audit, total } = await settleAndAudit(writer);
      process.stderr.write(`source task's member killed with ${loggedAtKill} rows logged, ${writtenAtKill} of ${total} changes committed\n`);
      assert.ok(writtenAtKill < total, 'the member was killed while the writer wrote');
      assert.deepEqual(audit, { rows: total, wrongKeys: [], duplicates: 0, missing: 0, wrongMirror: [] });
      // The source task's new owner reads the slot.
      const [slot] = await server.query<{ active: boolean }>("SELECT active FROM pg_replication_slots WHERE slot_name = 'cdc_slot'");
      assert.equal(slot?.active, true, 'the slot is read by the source task');
    });
  });

  test('a snapshot emitted over several polls: the checkpoint waits for its end, and the task is not failed over and over', { timeout: 300_000 }, async () => {
    const writer = await seeded(352, 60);
    // 10 rows a poll, each FETCH of 10 held 200 ms: 1.2 s of snapshot against a 300 ms interval.
    const { scaffold, members } = await start('pg-cdc-snapshot', {
      PGC_BUFFERED: '10',
      PGC_FETCH: '10',
      WEIR_TEST_POSTGRES_SOURCE_DELAY: 'snapshot-fetch:200',
    });
    await story(scaffold.members, async () => {
      await until(
        'the slot, once the snapshot is read',
        async () => ((await server.query("SELECT 1 FROM pg_replication_slots WHERE slot_name = 'cdc_slot'")).length > 0 ? true : undefined),
        120_000,
      );
      await writer.write(server.connectionString, 60, 60);
      const { audit, total } = await settleAndAudit(writer);
      assert.deepEqual(audit, { rows: total, wrongKeys: [], duplicates: 0, missing: 0, wrongMirror: [] });
      const failures = members.flatMap((run) => run.stderr().match(/cdc task 0 failed[^\n]*/g) ?? []);
      assert.deepEqual(failures, [], 'the source task never failed');
    });
  });
});
