import type { Collector } from '../../core/functions/process-functions.ts';

/**
 * Collects a function's output together with the event time each record gets (Flink's
 * TimestampedCollector): the runtime sets `timestamp` before calling the function. Reset before
 * each call with whether the output carries timestamps at all.
 */
export class TimestampedCollector<T> implements Collector<T> {
  records: T[] = [];
  timestamps: number[] | undefined = undefined;
  /** The timestamp records collected now get (NaN: none). */
  timestamp = Number.NaN;

  reset(stamped: boolean): void {
    this.records = [];
    this.timestamps = stamped ? [] : undefined;
  }

  /** Drops what was collected after the first `length` records (the output of a call that threw). */
  truncate(length: number): void {
    this.records.length = length;
    if (this.timestamps !== undefined) this.timestamps.length = length;
  }

  collect(record: T): void {
    this.records.push(record);
    this.timestamps?.push(this.timestamp);
  }
}
