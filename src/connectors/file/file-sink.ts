import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Sink } from '../../core/connector/sink.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import { isEarlierOwner, ownerOfToken, ownerToken, type TaskOwner } from '../../core/operator/task-owner.ts';
import { dataLoss, type RecoveryContext, type TwoPhaseCommitLogic, twoPhaseCommitSink } from '../two-phase-commit-sink.ts';

export interface FileSinkOptions<T> {
  /** The output folder. Committed files appear in it; work in progress stays in its hidden subfolders. */
  path: string;
  /** One line per record; default JSON. */
  format?: (record: T) => string;
}

/** A pre-committed part file, as kept in the checkpoint. */
export interface FileCommittable {
  version: 1;
  /** Relative to the output folder. */
  pending: string;
  committed: string;
}

export interface FileTransaction {
  file: string;
  /** `<random>`: the part's own name after `part-<subtask>-` (and the checkpoint id, once pending). */
  random: string;
  fd: number;
  bytes: number;
}

const IN_PROGRESS = '.in-progress';
const PENDING = '.pending';
/** A part file in progress or pending: `part-<subtask>-...`, `.o<owner>` at the end in cluster mode. */
const PART_FILE = /^part-(\d+)-[0-9a-f-]+?(?:\.o([0-9a-z_]+))?$/;
/** How often, at most, a cluster task's sink looks for its earlier owners' part files (at a completed checkpoint). */
export const EARLIER_OWNERS_LOOK_MS = 10_000;

/**
 * An exactly-once file sink (Flink's FileSink, row format): each checkpoint's records go to an
 * in-progress part file; on the barrier it is flushed, synced and moved to `.pending/` (the
 * pre-commit); when the checkpoint completes it is renamed into the output folder, where readers
 * see it. Readers must ignore the hidden `.in-progress/` and `.pending/` folders.
 *
 * File names: `part-<subtask>-<checkpoint id>-<random>` once committed. In cluster mode the
 * in-progress and pending names end in `.o<owner>` (the producer id and epoch the task's run was
 * fenced in with, task-owner.ts): a restore never deletes a later owner's files (its own run may
 * have stood still between its fencing and its recovery while the task moved on: the later owner's
 * pending file would be gone at its commit), and the task's owner deletes its earlier owners'
 * (zombies': pre-committed after its restore, never to be committed) at a completed checkpoint, at
 * most every {@link EARLIER_OWNERS_LOOK_MS}.
 */
export function fileSink<T>(options: FileSinkOptions<T>): Sink<T> {
  return twoPhaseCommitSink<T, FileTransaction, FileCommittable>('file sink', () => fileSinkLogic(options));
}

/** The file sink's two-phase-commit logic of one subtask (see {@link fileSink}). */
export function fileSinkLogic<T>(options: FileSinkOptions<T>): TwoPhaseCommitLogic<T, FileTransaction, FileCommittable> {
  const format = options.format ?? ((record: T) => JSON.stringify(record));
  let subtaskIndex = 0;
  let parallelism = 1;
  let owner: TaskOwner | undefined;
  let suffix = '';
  let lookedAt = Number.NEGATIVE_INFINITY;
  const root = options.path;
  /** The part files of both hidden folders of this subtask's share (old subtask s with s % parallelism === this one), and the owner each names. */
  const partsOfShare = (): { folder: string; name: string; owner: TaskOwner | undefined }[] =>
    [IN_PROGRESS, PENDING].flatMap((folder) =>
      readdirSync(join(root, folder)).flatMap((name) => {
        const match = PART_FILE.exec(name);
        if (match === null || Number(match[1]) % parallelism !== subtaskIndex) return [];
        return [{ folder, name, owner: ownerOfToken(match[2]) }];
      }),
    );
  return {
    open(context: OperatorContext) {
      subtaskIndex = context.subtaskIndex;
      parallelism = context.parallelism;
      owner = context.taskOwner;
      suffix = owner === undefined ? '' : `.o${ownerToken(owner)}`;
      mkdirSync(join(root, IN_PROGRESS), { recursive: true });
      mkdirSync(join(root, PENDING), { recursive: true });
    },
    beginTransaction() {
      const random = randomBytes(6).toString('hex');
      const file = join(root, IN_PROGRESS, `part-${subtaskIndex}-${random}${suffix}`);
      return { file, random, fd: openSync(file, 'wx'), bytes: 0 };
    },
    write(transaction, batch) {
      let text = '';
      for (const record of batch) text += `${format(record)}\n`;
      transaction.bytes += writeSync(transaction.fd, text);
    },
    preCommit(transaction, checkpointId) {
      if (transaction.bytes === 0) {
        closeSync(transaction.fd);
        rmSync(transaction.file, { force: true });
        return null;
      }
      fsyncSync(transaction.fd);
      closeSync(transaction.fd);
      const committed = `part-${subtaskIndex}-${checkpointId}-${transaction.random}`;
      const pending = join(PENDING, `${committed}${suffix}`);
      renameSync(transaction.file, join(root, pending));
      syncFolder(join(root, PENDING));
      return { version: 1, pending, committed };
    },
    commit(committable) {
      const from = join(root, committable.pending);
      const to = join(root, committable.committed);
      try {
        renameSync(from, to);
        syncFolder(root);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        if (existsSync(to)) return; // committed before: a commit is idempotent
        throw dataLoss(
          `the pre-committed file ${from} is gone and was never committed: its records are lost`,
          'something outside Weir deleted files in the output folder; restore the file or rerun the job from an earlier savepoint',
        );
      }
    },
    abort(transaction) {
      try {
        closeSync(transaction.fd);
      } catch {
        // already closed
      }
      rmSync(transaction.file, { force: true });
    },
    abortLingering(context: RecoveryContext<FileCommittable>) {
      // What its checkpoint does not hold is a crashed run's; in cluster mode never a later owner's.
      subtaskIndex = context.subtaskIndex;
      parallelism = context.parallelism;
      const keep = new Set(context.allRestoredCommittables.map((committable) => committable.pending));
      let aborted = 0;
      for (const { folder, name, owner: other } of partsOfShare()) {
        if (keep.has(join(folder, name)) || (owner !== undefined && other !== undefined && isEarlierOwner(owner, other))) continue;
        rmSync(join(root, folder, name), { force: true });
        aborted++;
      }
      return aborted;
    },
    notifyCheckpointComplete() {
      if (owner === undefined || Date.now() - lookedAt < EARLIER_OWNERS_LOOK_MS) return;
      lookedAt = Date.now();
      for (const { folder, name, owner: other } of partsOfShare()) {
        if (other !== undefined && isEarlierOwner(other, owner)) rmSync(join(root, folder, name), { force: true });
      }
    },
  };
}

function syncFolder(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
