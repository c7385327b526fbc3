import type { CheckpointStorage } from '../../checkpoint/storage/checkpoint-storage.ts';
import { CompletedCheckpointStore } from '../../checkpoint/storage/completed-checkpoint-store.ts';
import { checkpointedCommittables } from '../../connectors/checkpointed-committables.ts';
import type { KafkaCommittable, TransactionDriver } from '../../connectors/kafka/transaction-driver.ts';
import { parseTransactionalId } from '../../connectors/kafka/transactional-id.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { existingStorage } from '../existing-storage.ts';

export interface PrefixCheckOptions {
  /** The transactional id prefix of a stopped job's exactly-once Kafka sink. */
  prefix: string;
  /** End its open transactions: commit what the latest checkpoint holds, abort the rest. */
  abort: boolean;
  /** The job's checkpoint storage (`--checkpoint-storage`, or the job's `checkpointing.storage`). */
  checkpointStorage: string | undefined;
  /** Abort every open transaction, those a checkpoint holds too (for a job that will start `--fresh`). */
  fresh: boolean;
}

/** The transactions of the prefix the latest completed checkpoint holds (pre-committed, for its next start to commit). */
interface HeldTransactions {
  /** `checkpoint 5`, `savepoint 7`. */
  name: string | undefined;
  what: string;
  committables: KafkaCommittable[];
}

/**
 * `weir doctor --prefix`: the open transactions of a stopped job's sink, and with `--abort` what a
 * start of the job would do with them: commit those its latest completed checkpoint holds (a crash
 * between "checkpoint complete" and the commits leaves them open, and they are the job's records up
 * to that checkpoint: its state and offsets are past them), abort the rest. Without the job's
 * checkpoint storage it cannot tell the two apart, so it refuses to abort (unless `--fresh`: the
 * checkpoints are dropped). It holds the storage's lock meanwhile, so no run of the job acts on them
 * at the same time. Returns the problems left.
 */
export async function checkPrefixTransactions(driver: TransactionDriver, options: PrefixCheckOptions, print: (line: string) => void): Promise<string[]> {
  const { prefix } = options;
  const storage = options.checkpointStorage === undefined || options.fresh ? undefined : existingStorage(options.checkpointStorage);
  if (storage !== undefined && options.abort) await storage.initialize();
  // A job that runs on this storage ends its own transactions: refused (CHECKPOINT_STORAGE_LOCKED) while it lives.
  const lock = storage !== undefined && options.abort ? await storage.lock({ log: print }) : undefined;
  try {
    const held = storage === undefined ? undefined : await heldTransactions(storage, prefix);
    if (held !== undefined) print(`checkpoints: ${held.what}`);
    const heldIds = new Set(held?.committables.map((committable) => committable.transactionalId));
    const open = await driver.listOpenTransactions(prefix);
    const described = open.map((id) => (heldIds.has(id) ? `${id} (pre-committed, held by the latest checkpoint)` : id));
    print(`open transactions under "${prefix}": ${open.length === 0 ? 'none' : described.join(', ')}`);
    if (open.length === 0) return [];
    if (!options.abort) return [`${open.length} open transaction(s) under "${prefix}"`];
    if (held === undefined && !options.fresh) throw refusal(prefix, open.length);

    const problems: string[] = [];
    const toCommit = held?.committables.filter((committable) => open.includes(committable.transactionalId)) ?? [];
    let committed = 0;
    for (const committable of toCommit) {
      try {
        await driver.commit(committable);
        committed++;
      } catch (error) {
        problems.push(
          `the commit of "${committable.transactionalId}", held by the latest checkpoint: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    if (toCommit.length > 0) print(`committed ${committed} transaction${committed === 1 ? '' : 's'} ${held?.name} holds (as its next start would)`);
    const lingering = open.filter((id) => !heldIds.has(id));
    for (const id of lingering) await driver.abortLingering(id);
    print(`aborted ${lingering.length} lingering transaction${lingering.length === 1 ? '' : 's'}`);
    return problems;
  } finally {
    lock?.release();
  }
}

/** What the latest completed checkpoint or savepoint of the storage holds under the prefix (what a start restores and commits). */
async function heldTransactions(storage: CheckpointStorage, prefix: string): Promise<HeldTransactions> {
  const latest = await new CompletedCheckpointStore(storage).latest();
  if (latest === undefined) return { name: undefined, what: `none completed in ${storage.root}: no transaction is held by a checkpoint`, committables: [] };
  const name = `${latest.kind} ${latest.checkpointId}`;
  if (await storage.isMarkedCommitted(latest.location.path)) {
    return { name, what: `the latest, ${name} (${latest.location.path}), is recorded committed: it holds nothing to commit`, committables: [] };
  }
  const committables = (await checkpointedCommittables<KafkaCommittable>(storage, latest))
    .map((entry) => entry.committable)
    .filter((committable) => typeof committable?.transactionalId === 'string' && parseTransactionalId(prefix, committable.transactionalId) !== undefined);
  return { name, what: `${name}, the latest (${latest.location.path}), holds ${committables.length} transaction(s) under "${prefix}"`, committables };
}

function refusal(prefix: string, open: number): WeirError {
  return new WeirError(
    'DOCTOR_FOUND_PROBLEMS',
    `refusing to abort the ${open} open transaction(s) under "${prefix}" without the job's checkpoints: ` +
      "the latest checkpoint may hold some of them pre-committed (after a crash between its completion and the commits), and aborting those loses the job's records up to it for good",
    {
      hint:
        `weir doctor --prefix ${prefix} --abort --checkpoint-storage <the job's checkpointing.storage> (or --job <module> when its config names it) ` +
        'commits what the latest checkpoint holds and aborts the rest, as the next start of the job does (or just start the job); ' +
        'only for a job that will start --fresh (its checkpoints dropped), --fresh aborts them all',
    },
  );
}
