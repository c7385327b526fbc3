import { deserialize } from 'node:v8';
import { WeirError } from '../../../core/errors/weir-error.ts';
import { OperatorStateBackend } from '../../../state/operator-state-backend.ts';
import type { ChannelMessage } from '../channel-message.ts';
import { CHANNEL_STATE_LIST, CHANNEL_STATE_VERSION, type ChannelStateEntry } from './channel-state-writer.ts';

/**
 * The records a restored unaligned checkpoint holds for one subtask's input channels (Flink's
 * SequentialChannelStateReader), as the channel messages to replay into the task before any new
 * input, in the order they were taken. `inputChannels` are the task's channel ids in the plan's
 * order, `inputIndexOf` the input each feeds; `what` names the checkpoint and task in errors.
 * A layout other than the one the state was taken in is refused: its records would go to the
 * wrong input.
 */
export function readChannelState(
  bytes: Uint8Array,
  inputChannels: readonly number[],
  inputIndexOf: (channel: number) => number,
  what: string,
): Extract<ChannelMessage, { kind: 'records' }>[] {
  const entries = OperatorStateBackend.restoreFor([bytes], 1, 0).getListState<ChannelStateEntry>(CHANNEL_STATE_LIST).get();
  const messages: Extract<ChannelMessage, { kind: 'records' }>[] = [];
  for (const entry of entries) {
    if (entry.v > CHANNEL_STATE_VERSION) {
      throw new WeirError(
        'STATE_SNAPSHOT_VERSION',
        `${what}: its channel state has version ${entry.v}, newer than this Weir reads (${CHANNEL_STATE_VERSION})`,
        {
          hint: 'run a newer Weir, or restore from a savepoint (savepoints hold no channel state)',
        },
      );
    }
    const channel = inputChannels[entry.channel];
    if (entry.channels !== inputChannels.length || channel === undefined || inputIndexOf(channel) !== entry.input) {
      throw new WeirError(
        'UNKNOWN_OPERATOR_STATE',
        `${what}: its channel state (records in flight when an unaligned checkpoint was taken) is of ${entry.channels} input channels, and the task now has ${inputChannels.length} of another layout`,
        {
          hint: 'start the job as it was when the checkpoint was taken and take a savepoint (savepoints are aligned, they hold no channel state), then change the job and start it from that savepoint',
        },
      );
    }
    const message: Extract<ChannelMessage, { kind: 'records' }> = {
      kind: 'records',
      channel,
      records: deserialize(entry.records) as unknown[],
      recovered: true,
    };
    if (entry.timestamps !== undefined) message.timestamps = entry.timestamps;
    messages.push(message);
  }
  return messages;
}
