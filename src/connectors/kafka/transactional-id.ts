/**
 * The exactly-once Kafka sink's transactional ids: `<prefix>-<subtask>-<slot>`, built here and
 * parsed here, one way. A subtask writes its transactions under a small pool of slots; the prefix
 * is the sink's `transactionalIdPrefix`, by default `weir-<job name>-<sink uid>`.
 */

/** Where a transactional id of a sink belongs: the subtask that wrote it and the slot of that subtask's pool. */
export interface TransactionalIdParts {
  subtask: number;
  slot: number;
}

/** The transactional id of a subtask's slot: `<prefix>-<subtask>-<slot>`. */
export function transactionalId(prefix: string, subtask: number, slot: number): string {
  return `${prefix}-${subtask}-${slot}`;
}

/**
 * The subtask and slot of a transactional id of this prefix, or undefined when the id does not
 * follow `<prefix>-<subtask>-<slot>` exactly: an id of another sink whose prefix merely starts with
 * this one (`<prefix>-x-0-3`) is not one of ours.
 */
export function parseTransactionalId(prefix: string, id: string): TransactionalIdParts | undefined {
  const match = new RegExp(`^${escapeRegExp(prefix)}-(\\d+)-(\\d+)$`).exec(id);
  if (match === null) return undefined;
  const subtask = Number(match[1]);
  const slot = Number(match[2]);
  return Number.isSafeInteger(subtask) && Number.isSafeInteger(slot) ? { subtask, slot } : undefined;
}

/** The default prefix of a sink's transactional ids: `weir-<job name>-<sink uid>`, each reduced to the characters Kafka ids keep readable. */
export function defaultTransactionalIdPrefix(jobName: string, sinkUid: string): string {
  return `weir-${sanitize(jobName)}-${sanitize(sinkUid)}`;
}

function sanitize(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
