/**
 * A contiguous, inclusive range of key groups `[start, end]`, Flink's `KeyGroupRange`. A subtask of
 * a keyed operator owns one such range. The range is empty when `end < start`.
 */
export interface KeyGroupRange {
  readonly start: number;
  readonly end: number;
}

/** The range that holds no key group. */
export const EMPTY_KEY_GROUP_RANGE: KeyGroupRange = Object.freeze({ start: 0, end: -1 });

/** A frozen range `[start, end]`; `end < start` gives an empty range. */
export function keyGroupRange(start: number, end: number): KeyGroupRange {
  return Object.freeze({ start, end });
}

/** Whether `keyGroup` lies inside `range`. */
export function keyGroupRangeContains(range: KeyGroupRange, keyGroup: number): boolean {
  return keyGroup >= range.start && keyGroup <= range.end;
}

/** How many key groups `range` holds (0 when empty). */
export function keyGroupRangeSize(range: KeyGroupRange): number {
  return range.end < range.start ? 0 : range.end - range.start + 1;
}

/** The key groups both ranges hold (possibly empty). */
export function keyGroupRangeIntersection(a: KeyGroupRange, b: KeyGroupRange): KeyGroupRange {
  const start = Math.max(a.start, b.start);
  const end = Math.min(a.end, b.end);
  return end < start ? EMPTY_KEY_GROUP_RANGE : keyGroupRange(start, end);
}

/** `0-63`, or `empty`, for messages. */
export function formatKeyGroupRange(range: KeyGroupRange): string {
  return range.end < range.start ? 'empty' : `${range.start}-${range.end}`;
}
