import { WeirError } from '../../core/errors/weir-error.ts';
import { kafkaErrorIds } from './kafka-error-ids.ts';

/** The Kafka answers that mean this producer or group member was fenced: another owns its work now. */
const FENCED = ['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID', 'INVALID_TXN_STATE'];

/** TASK_FENCED for a fenced producer or member, else the error as it is. */
export function fencedOr(error: unknown, transactionalId: string): unknown {
  const ids = kafkaErrorIds(error);
  const fenced = ids.find((id) => FENCED.includes(id));
  if (fenced === undefined) return error;
  return new WeirError(
    'TASK_FENCED',
    `"${transactionalId}" was fenced (${fenced}): another member owns its work now, or the broker timed its transaction out; its open transaction is aborted`,
    {
      fault: 'external',
      retriable: false,
      cause: error,
    },
  );
}
