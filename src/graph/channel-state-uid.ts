/**
 * The channel state of an unaligned checkpoint (Flink's InputChannelStateHandle): the records that
 * were in flight on a task's input channels when its barrier overtook them. Each task's goes into
 * the checkpoint as one more operator entry of the metadata, under the uid of the task's head
 * operator with {@link CHANNEL_STATE_UID_SUFFIX}, one operator state file per subtask: a Weir that
 * does not know channel state refuses the checkpoint (state of an operator the job does not have)
 * instead of dropping those records.
 */
export const CHANNEL_STATE_UID_SUFFIX = '#channel-state';

/** The uid the channel state of the task headed by `headUid` is stored under. */
export function channelStateUid(headUid: string): string {
  return `${headUid}${CHANNEL_STATE_UID_SUFFIX}`;
}

/** The head operator's uid when `uid` names channel state, else undefined. */
export function channelStateHead(uid: string): string | undefined {
  return uid.endsWith(CHANNEL_STATE_UID_SUFFIX) ? uid.slice(0, -CHANNEL_STATE_UID_SUFFIX.length) : undefined;
}
