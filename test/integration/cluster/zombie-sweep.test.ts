/**
 * Issue 32, point 6: a zombie member's sweep of earlier owners' folders must not delete the live
 * owner's checkpoint. After a task's first commit (and every 100th) its owner sweeps the other
 * owner folders of the task (`p<producer id>-e<epoch>`, cluster/task-storage.ts); once it swept
 * every one but its own, the newer owner's included.
 *
 * On the real broker: member A runs every task and pauses itself (WEIR_FAULT owner-sweep:1:stop,
 * SIGSTOP) right after a task's first commit, before that task's sweep lists the folders. Past the
 * session timeout member B takes every task over, restores A's checkpoints, processes more input
 * and commits its own (a newer epoch's folder); then its input is quiet, so its latest checkpoint
 * of that task stays the one on disk. A is woken (SIGCONT): its sweep runs and must leave B's files
 * as they were. Then B is SIGKILLed and member C takes over: it restores the task from B's latest
 * checkpoint (not STATE_FILE_MISSING), more input flows, and the outputs are audited
 * read_committed (every input once, every running total and window right).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ownerOfFolder } from '../../../src/cluster/earlier-owner-folders.ts';
import { auditClusterOutputs, BASE_TS, closers, producePayments, totalsAtLeast, withMemberLogs } from '../../harness/cluster-job.ts';
import { clusterTest, payment } from '../../harness/cluster-test.ts';
import { until, type WeirRun } from '../../harness/weir-run.ts';

/** Every file under `folder` (relative paths, sorted); none when it is gone. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(folder, join(entry.parentPath, entry.name)))
    .sort();
}

/** The owner folders of a task's folder that are newer (higher epoch) than `than`. */
async function newerOwners(taskFolder: string, than: string): Promise<string[]> {
  const mine = ownerOfFolder(than);
  assert.ok(mine !== undefined, `${than} is an owner folder`);
  return (await readdir(taskFolder)).filter((name) => {
    const owner = ownerOfFolder(name);
    return owner !== undefined && owner.producerId === mine.producerId && owner.epoch > mine.epoch;
  });
}

/** Fails at once when `run` logs `pattern` (a task failing for a reason the test rules out) while `story` runs. */
async function without(run: WeirRun, pattern: RegExp, story: () => Promise<void>): Promise<void> {
  let done = false;
  const watch = (async () => {
    while (!done) {
      const line = run
        .stderr()
        .split('\n')
        .find((entry) => pattern.test(entry));
      if (line !== undefined) throw new Error(`a member logged ${pattern}: ${line}`);
      await sleep(50);
    }
  })();
  try {
    await Promise.race([story(), watch]);
  } finally {
    done = true;
    await watch.catch(() => {});
  }
}

test("a zombie member woken before its owner sweep deletes none of the live owner's checkpoint files; the next owner restores them; exact", {
  timeout: 300_000,
}, async (t) => {
  const cluster = await clusterTest('zombie-sweep');
  await withMemberLogs(cluster.members, async () => {
    const all = Array.from({ length: 6000 }, (_, seq) => payment(seq));
    await producePayments(cluster.topics.input, all.slice(0, 2000));

    // A runs every task and pauses itself right before a task's first sweep.
    const a = cluster.member({ env: { WEIR_FAULT: 'owner-sweep:1:stop' } });
    const paused = await a.waitFor(/pausing the process at owner-sweep of checkpoint 1 \((.+)\)\n/, 120_000);
    const aRoot = paused[1] as string;
    const taskFolder = dirname(aRoot);
    const [, uid, task] = /^(.+)-(\d+)$/.exec(basename(taskFolder)) ?? [];
    assert.ok(uid !== undefined && task !== undefined, `${taskFolder} is a task's folder`);

    // B takes every task once A's session is over, processes more input and commits checkpoints of its own.
    const b = cluster.member();
    await b.waitFor(new RegExp(`${uid} task ${task} started from checkpoint \\d+`), 120_000);
    await producePayments(cluster.topics.input, all.slice(2000, 4000));
    await totalsAtLeast(cluster.topics, 4000);
    const [bOwner] = await until('B to own a folder of the task with a checkpoint in it', async () => {
      const newer = await newerOwners(taskFolder, basename(aRoot));
      return newer.length === 1 && (await filesUnder(join(taskFolder, newer[0] as string))).length > 0 ? newer : undefined;
    });
    const bFolder = join(taskFolder, bOwner as string);
    // Quiet input: B's latest checkpoint of the task stays the one on disk (an idle task commits nothing).
    let bFiles = await filesUnder(bFolder);
    const quietBy = Date.now() + 60_000;
    for (let stable = 0; stable < 6; ) {
      assert.ok(Date.now() < quietBy, `B's folder of the task kept changing for 60 s after its input stopped: ${bFiles.join(', ')}`);
      await sleep(500);
      const now = await filesUnder(bFolder);
      stable = now.join('\n') === bFiles.join('\n') ? stable + 1 : 0;
      bFiles = now;
    }
    const bCheckpoint = Number(/^chk-(\d+)\//.exec(bFiles[0] ?? '')?.[1]);
    assert.ok(bFiles.length > 0 && bFiles.every((file) => file.startsWith(`chk-${bCheckpoint}/`)), `B's folder holds one checkpoint: ${bFiles.join(', ')}`);

    // A wakes: its sweep runs now, after the task moved. Killed once it swept (it would rejoin the group).
    // The sweep is best effort: one that failed part-way (a folder changing under it) ran too, and what it deleted shows below.
    const sweptLine = (text: string) =>
      text.split('\n').find((line) => line.includes(`swept beside ${aRoot}:`) || line.includes(`sweep beside ${aRoot} failed:`));
    const from = a.stderr().length;
    // In some CI runs A woke on its own before this SIGCONT (cause unknown; a run leading a session of
    // its own woke early too), past its session timeout: its sweep then ran earlier than this test means
    // it to, maybe before B wrote its files. The checks below hold the same way; the diagnostic says so.
    if (sweptLine(a.stderr()) !== undefined) t.diagnostic(`A woke before the test's SIGCONT and swept: ${sweptLine(a.stderr())}`);
    a.child.kill('SIGCONT');
    await until("A's sweep beside its folder of the task", async () => (sweptLine(a.stderr()) === undefined ? undefined : true), 30_000).catch(
      (error: Error) => {
        // Say where A's lines about the paused sweep are: after the SIGCONT, before it (it woke early), or nowhere.
        const lines = a.stderr().split('\n');
        const pausedAt = lines.findIndex((line) => line.includes('pausing the process at owner-sweep'));
        const before = a.stderr().slice(0, from).split('\n').length - 1;
        throw new Error(
          `${error.message}; A's lines from its pause (SIGCONT sent after line ${before - pausedAt}):\n${lines.slice(pausedAt, pausedAt + 80).join('\n')}`,
        );
      },
    );
    a.child.kill('SIGKILL');
    await a.exited;
    const swept = sweptLine(a.stderr());
    const missing = bFiles.filter((file) => !existsSync(join(bFolder, file)));
    assert.deepEqual(missing, [], `the zombie's sweep (${swept}) deleted the live owner's checkpoint ${bCheckpoint} files in ${bFolder}`);

    // B dies; C restores the task from B's latest checkpoint, and the job goes on exactly once.
    b.child.kill('SIGKILL');
    await b.exited;
    const c = cluster.member();
    await without(c, /STATE_FILE_MISSING|state file \S+ is missing/, async () => {
      await c.waitFor(new RegExp(`${uid} task ${task} started from checkpoint ${bCheckpoint} `), 120_000);
      await producePayments(cluster.topics.input, all.slice(4000));
      const last = closers(all.length, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], BASE_TS + all.length * 5 + 5000);
      await producePayments(cluster.topics.input, last);
      await auditClusterOutputs(cluster.topics, [...all, ...last], all);
    });
  });
});
