import { isEarlierOwner } from '../core/operator/task-owner.ts';

/** A task owner's folder in the checkpoint storage: `p<producer id>-e<producer epoch>`. */
const OWNER_FOLDER = /^p(\d+)-e(\d+)$/;

/** The owner a folder name names, or undefined when it is not an owner folder. */
export function ownerOfFolder(name: string): { producerId: bigint; epoch: number } | undefined {
  const match = OWNER_FOLDER.exec(name);
  return match === null ? undefined : { producerId: BigInt(match[1] as string), epoch: Number(match[2]) };
}

/**
 * The owner folders (by name) a task's owner may delete: those of EARLIER owners only, that is the
 * same producer id with a lower epoch (a task's transactional id gets a higher epoch at every new
 * owner's InitProducerId). A newer owner's folder is never one of them, so an owner that was paused
 * and woke after its task moved (a zombie) cannot delete the live owner's checkpoints; a folder of
 * another producer id (the broker gave the id a new one: epochs exhausted, or the id expired) is
 * left, as its order is unknown.
 */
export function earlierOwnerFolders(names: readonly string[], mine: { producerId: number | bigint; epoch: number }): string[] {
  const me = { producerId: BigInt(mine.producerId), epoch: mine.epoch };
  return names.filter((name) => {
    const owner = ownerOfFolder(name);
    return owner !== undefined && isEarlierOwner(owner, me);
  });
}
