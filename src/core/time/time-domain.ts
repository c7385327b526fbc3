/** Flink's `TimeDomain`: timers fire on the wall clock or on the watermark. */
export type TimeDomain = 'processing' | 'event';
