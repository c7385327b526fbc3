import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Sink } from '../../core/connector/sink.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import { dataLoss, type RecoveryContext, twoPhaseCommitSink } from '../two-phase-commit-sink.ts';

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

interface FileTransaction {
  file: string;
  name: string;
  fd: number;
  bytes: number;
}

const IN_PROGRESS = '.in-progress';
const PENDING = '.pending';

/**
 * An exactly-once file sink (Flink's FileSink, row format): each checkpoint's records go to an
 * in-progress part file; on the barrier it is flushed, synced and moved to `.pending/` (the
 * pre-commit); when the checkpoint completes it is renamed into the output folder, where readers
 * see it. Readers must ignore the hidden `.in-progress/` and `.pending/` folders.
 *
 * File names: `part-<subtask>-<checkpoint id>-<random>` once committed.
 */
export function fileSink<T>(options: FileSinkOptions<T>): Sink<T> {
  const format = options.format ?? ((record: T) => JSON.stringify(record));
  return twoPhaseCommitSink<T, FileTransaction, FileCommittable>('file sink', () => {
    let subtaskIndex = 0;
    const root = options.path;
    return {
      open(context: OperatorContext) {
        subtaskIndex = context.subtaskIndex;
        mkdirSync(join(root, IN_PROGRESS), { recursive: true });
        mkdirSync(join(root, PENDING), { recursive: true });
      },
      beginTransaction() {
        const name = `part-${subtaskIndex}-${randomBytes(6).toString('hex')}`;
        const file = join(root, IN_PROGRESS, name);
        return { file, name, fd: openSync(file, 'wx'), bytes: 0 };
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
        const [, subtask, random] = /^part-(\d+)-([0-9a-f]+)$/.exec(transaction.name) as RegExpExecArray;
        const pending = join(PENDING, `part-${subtask}-${checkpointId}-${random}`);
        renameSync(transaction.file, join(root, pending));
        syncFolder(join(root, PENDING));
        return { version: 1, pending, committed: `part-${subtask}-${checkpointId}-${random}` };
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
        // Files of old subtasks s with s % parallelism === this subtask are this subtask's to clean.
        const mine = (name: string) => {
          const subtask = Number(/^part-(\d+)-/.exec(name)?.[1] ?? -1);
          return subtask >= 0 && subtask % context.parallelism === context.subtaskIndex;
        };
        const keep = new Set(context.allRestoredCommittables.map((committable) => committable.pending));
        let aborted = 0;
        for (const name of readdirSync(join(root, IN_PROGRESS))) {
          if (!mine(name)) continue;
          rmSync(join(root, IN_PROGRESS, name), { force: true });
          aborted++;
        }
        for (const name of readdirSync(join(root, PENDING))) {
          if (!mine(name) || keep.has(join(PENDING, name))) continue;
          rmSync(join(root, PENDING, name), { force: true });
          aborted++;
        }
        return aborted;
      },
    };
  });
}

function syncFolder(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
