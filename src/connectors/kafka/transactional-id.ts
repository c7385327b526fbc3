import { createHash } from 'node:crypto';

/**
 * The exactly-once Kafka sink's transactional ids: `<prefix>-<subtask>-<slot>`, built here and
 * parsed here, one way. A subtask writes its transactions under a small pool of slots; the prefix
 * is the sink's `transactionalIdPrefix`, by default `weir-<job name>-<sink uid>`.
 *
 * Two different prefixes never share an id: an id ends in `-<digits>-<digits>`, so it names its
 * prefix exactly (what is left before those two parts). Two sinks conflict only when their
 * prefixes are equal.
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

/**
 * The default prefix of a sink's transactional ids, one per (job name, sink uid) and never the
 * same for two of them: `weir-<job name>-<sink uid>` when the job name has no `-` and both are made
 * of `A-Z a-z 0-9 . _ -` only (then the first `-` after `weir-` ends the job name, so the prefix
 * says which pair it is); otherwise `weir-<job>-<uid>-h<12 hex>`, the names reduced to those
 * characters for readability and followed by a hash of the two original names (so jobs `a b` and
 * `a-b`, or job `a-b` with uid `x` and job `a` with uid `b-x`, get different prefixes).
 */
export function defaultTransactionalIdPrefix(jobName: string, sinkUid: string): string {
  const job = sanitize(jobName);
  const uid = sanitize(sinkUid);
  if (job === jobName && uid === sinkUid && !jobName.includes('-')) return `weir-${job}-${uid}`;
  const hash = createHash('sha256').update(jobName).update('\0').update(sinkUid).digest('hex').slice(0, 12);
  return `weir-${job}-${uid}-h${hash}`;
}

function sanitize(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '-');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
