import { Command } from 'commander';
import { stateFilesOf } from '../../checkpoint/storage/checkpoint-metadata.ts';
import { type CheckpointSummary, CompletedCheckpointStore } from '../../checkpoint/storage/completed-checkpoint-store.ts';
import { openCheckpointStorage } from '../../checkpoint/storage/open-checkpoint-storage.ts';
import { existingStorage } from '../existing-storage.ts';

/** `weir checkpoints list|show`: what a job's checkpoint folder holds. */
export function checkpointsCommand(): Command {
  const checkpoints = new Command('checkpoints').description("inspect a job's checkpoint storage (a folder or s3://<bucket>/<prefix>)");

  checkpoints
    .command('list')
    .description('list the checkpoints and savepoints of a checkpoint storage: id, status, size, time')
    .argument('<storage>', "the job's checkpointing.storage: a folder or s3://<bucket>/<prefix>")
    .option('--json', 'print JSON', false)
    .action(async (folder: string, options: { json: boolean }) => {
      const storage = existingStorage(folder);
      const entries = await new CompletedCheckpointStore(storage).list({ includeSavepoints: true });
      if (options.json) {
        console.log(
          JSON.stringify(
            entries.map((entry) => ({ ...summaryOf(entry), path: entry.location.path })),
            null,
            2,
          ),
        );
        return;
      }
      if (entries.length === 0) {
        console.log(`no checkpoints in ${storage.root}`);
        return;
      }
      console.log('id\tkind\tstatus\tsize\tcompleted at\tpath');
      for (const entry of entries) {
        const summary = summaryOf(entry);
        console.log(`${summary.checkpointId}\t${summary.kind}\t${summary.status}\t${summary.size}\t${summary.completedAt ?? '-'}\t${entry.location.path}`);
      }
    });

  checkpoints
    .command('show')
    .description('show one checkpoint or savepoint: its operators, their parallelism and state files')
    .argument('<path>', 'a chk-N or savepoint folder (or s3:// location), or its _metadata file')
    .option('--json', 'print the metadata as JSON', false)
    .action(async (path: string, options: { json: boolean }) => {
      const storage = openCheckpointStorage(path);
      const metadata = await storage.readMetadata(path);
      if (options.json) {
        console.log(JSON.stringify(metadata, null, 2));
        return;
      }
      const committed = await storage.isMarkedCommitted(metadata.location.path);
      console.log(`${metadata.kind} ${metadata.checkpointId} of job "${metadata.jobName}" (metadata version ${metadata.version})`);
      console.log(`  folder:          ${metadata.location.path}`);
      console.log(`  triggered:       ${new Date(metadata.triggeredAt).toISOString()}`);
      console.log(`  completed:       ${new Date(metadata.completedAt).toISOString()} (${metadata.completedAt - metadata.triggeredAt} ms)`);
      console.log(`  maxParallelism:  ${metadata.maxParallelism}`);
      const recorded = metadata.kind === 'savepoint' ? 'committed before it was reported' : 'committed (a restore commits nothing again)';
      console.log(`  transactions:    ${committed ? recorded : 'not recorded as committed (a restore commits them again)'}`);
      console.log('  operators:');
      for (const operator of metadata.operators) {
        const files = stateFilesOf({ operators: [operator] });
        const bytes = files.reduce((sum, handle) => sum + handle.size, 0);
        const shared = files.filter((handle) => handle.checkpoint !== undefined);
        const sharedText =
          shared.length === 0
            ? ''
            : ` (${shared.length} of them, ${formatBytes(shared.reduce((sum, handle) => sum + handle.size, 0))}, in earlier checkpoints' folders)`;
        console.log(
          `    ${operator.uid} (${operator.name}): parallelism ${operator.parallelism}, ${files.length} state files, ${formatBytes(bytes)}${sharedText}`,
        );
      }
    });

  return checkpoints;
}

function summaryOf(entry: CheckpointSummary) {
  return {
    checkpointId: entry.checkpointId,
    kind: entry.location.kind,
    status: entry.completed ? 'completed' : entry.problem !== undefined ? `unreadable: ${entry.problem}` : 'incomplete',
    size: formatBytes(entry.sizeBytes),
    completedAt: entry.metadata === undefined ? undefined : new Date(entry.metadata.completedAt).toISOString(),
  };
}

function formatBytes(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
