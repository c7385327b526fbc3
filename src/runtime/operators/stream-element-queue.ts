import type { AsyncTimer } from './async-timer-service.ts';

/** One record of an async I/O operator, from its first call until its results are emitted. */
export interface AsyncEntry {
  readonly record: unknown;
  /** Its event time; NaN: none. */
  readonly timestamp: number;
  /** Calls made so far. */
  attempt: number;
  done: boolean;
  /** What it became (when done without an error). */
  results: readonly unknown[] | undefined;
  /** Whether it ended in an error (`error` holds it: the last attempt's, or the timeout). */
  failed: boolean;
  error: unknown;
  readonly controller: AbortController;
  timeoutTimer: AsyncTimer | undefined;
  retryTimer: AsyncTimer | undefined;
  /** The queue's own mark on the record (the unordered queue's segment). */
  slot: unknown;
}

/**
 * The records in flight of an async I/O operator and the watermarks between them (Flink's
 * StreamElementQueue). `poll` gives what may be emitted next: a done record, or a watermark
 * (a number) once every record before it is out.
 */
export interface StreamElementQueue {
  /** Records held, done or not: what the operator's capacity bounds. */
  readonly size: number;
  add(entry: AsyncEntry): void;
  addWatermark(watermark: number): void;
  /** `entry` just became done. */
  completed(entry: AsyncEntry): void;
  poll(): AsyncEntry | number | undefined;
  /** Every record held, in the order they arrived (what a checkpoint keeps). */
  entries(): AsyncEntry[];
}

/** Flink's OrderedStreamElementQueue: records leave in the order they came, watermarks in their place. */
export class OrderedStreamElementQueue implements StreamElementQueue {
  #elements: (AsyncEntry | number)[] = [];
  #head = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(entry: AsyncEntry): void {
    this.#elements.push(entry);
    this.#size++;
  }

  addWatermark(watermark: number): void {
    const elements = this.#elements;
    // A watermark right after another one replaces it: nothing lies between them.
    if (elements.length > this.#head && typeof elements[elements.length - 1] === 'number') elements[elements.length - 1] = watermark;
    else elements.push(watermark);
  }

  completed(_entry: AsyncEntry): void {}

  poll(): AsyncEntry | number | undefined {
    const next = this.#elements[this.#head];
    if (next === undefined || (typeof next !== 'number' && !next.done)) return undefined;
    this.#elements[this.#head++] = 0;
    if (typeof next !== 'number') this.#size--;
    if (this.#head > 1024 && this.#head * 2 > this.#elements.length) {
      this.#elements = this.#elements.slice(this.#head);
      this.#head = 0;
    }
    return next;
  }

  entries(): AsyncEntry[] {
    const entries: AsyncEntry[] = [];
    for (let i = this.#head; i < this.#elements.length; i++) {
      const element = this.#elements[i] as AsyncEntry | number;
      if (typeof element !== 'number') entries.push(element);
    }
    return entries;
  }
}

/** The records between two watermarks: they leave as they complete, and the watermark after them only once all have. */
interface Segment {
  readonly held: Set<AsyncEntry>;
  ready: AsyncEntry[];
  readyHead: number;
  /** The watermark that ends the segment; undefined for the last, open one. */
  watermark: number | undefined;
}

/**
 * Flink's UnorderedStreamElementQueue: records leave as soon as they complete, but never across a
 * watermark: one that came after a watermark waits until the watermark is out, and the watermark
 * until every record before it is.
 */
export class UnorderedStreamElementQueue implements StreamElementQueue {
  readonly #segments: Segment[] = [UnorderedStreamElementQueue.#segment()];
  #size = 0;

  static #segment(): Segment {
    return { held: new Set(), ready: [], readyHead: 0, watermark: undefined };
  }

  get size(): number {
    return this.#size;
  }

  add(entry: AsyncEntry): void {
    const open = this.#segments[this.#segments.length - 1] as Segment;
    open.held.add(entry);
    entry.slot = open;
    this.#size++;
  }

  addWatermark(watermark: number): void {
    const segments = this.#segments;
    const open = segments[segments.length - 1] as Segment;
    const closed = segments[segments.length - 2];
    // No record since the last watermark: this one replaces it.
    if (open.held.size === 0 && closed !== undefined) closed.watermark = watermark;
    else {
      open.watermark = watermark;
      segments.push(UnorderedStreamElementQueue.#segment());
    }
  }

  completed(entry: AsyncEntry): void {
    (entry.slot as Segment).ready.push(entry);
  }

  poll(): AsyncEntry | number | undefined {
    const first = this.#segments[0] as Segment;
    const entry = first.ready[first.readyHead];
    if (entry !== undefined) {
      if (++first.readyHead === first.ready.length) {
        first.ready = [];
        first.readyHead = 0;
      }
      first.held.delete(entry);
      entry.slot = undefined;
      this.#size--;
      return entry;
    }
    if (first.held.size > 0 || first.watermark === undefined) return undefined;
    this.#segments.shift();
    return first.watermark;
  }

  entries(): AsyncEntry[] {
    return this.#segments.flatMap((segment) => [...segment.held]);
  }
}
