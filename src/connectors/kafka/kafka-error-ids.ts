/**
 * The Kafka protocol error ids (NOT_COORDINATOR, CONCURRENT_TRANSACTIONS, ...) inside an error the
 * client library threw: its ProtocolError carries `apiId`, and a ResponseError (an AggregateError)
 * carries one per failed partition or item.
 */
export function kafkaErrorIds(error: unknown): string[] {
  const ids: string[] = [];
  const visit = (value: unknown, depth: number) => {
    if (depth > 4 || value === null || typeof value !== 'object') return;
    const apiId = (value as { apiId?: unknown }).apiId;
    if (typeof apiId === 'string') ids.push(apiId);
    if (value instanceof AggregateError) for (const inner of value.errors) visit(inner, depth + 1);
    visit((value as { cause?: unknown }).cause, depth + 1);
  };
  visit(error, 0);
  return ids;
}

/**
 * What the broker said of each error, where it said more than the id (the error message of a
 * partition's answer, with its path: "/responses/0/partitions/1"), so a failure names which check refused it.
 */
export function kafkaServerMessages(error: unknown): string[] {
  const messages: string[] = [];
  const visit = (value: unknown, depth: number) => {
    if (depth > 4 || value === null || typeof value !== 'object') return;
    const { serverErrorMessage, path } = value as { serverErrorMessage?: unknown; path?: unknown };
    if (typeof serverErrorMessage === 'string' && serverErrorMessage !== '')
      messages.push(typeof path === 'string' ? `${path}: ${serverErrorMessage}` : serverErrorMessage);
    if (value instanceof AggregateError) for (const inner of value.errors) visit(inner, depth + 1);
    visit((value as { cause?: unknown }).cause, depth + 1);
  };
  visit(error, 0);
  return messages;
}

/** Whether the error carries any of these Kafka error ids. */
export function hasKafkaError(error: unknown, ...ids: string[]): boolean {
  return kafkaErrorIds(error).some((id) => ids.includes(id));
}

/** Errors a transactional request may be retried on (after finding the coordinator or leader again). */
export const RETRIABLE_TRANSACTION_ERRORS = [
  'COORDINATOR_LOAD_IN_PROGRESS',
  'COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR',
  'CONCURRENT_TRANSACTIONS',
  'NOT_LEADER_OR_FOLLOWER',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'REQUEST_TIMED_OUT',
];
