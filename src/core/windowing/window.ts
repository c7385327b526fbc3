/**
 * A window: the records of one key that a window function sees together (Flink's Window). Time
 * windows cover [start, end) in milliseconds of event or processing time; the global window holds
 * everything (count windows).
 */
export class TimeWindow {
  readonly start: number;
  /** Exclusive. */
  readonly end: number;

  constructor(start: number, end: number) {
    this.start = start;
    this.end = end;
  }

  /** The last timestamp in the window (end - 1): its results carry this timestamp, and it fires when the watermark reaches it. */
  maxTimestamp(): number {
    return this.end - 1;
  }

  /** Whether the two windows overlap or touch (session windows merge then). */
  intersects(other: TimeWindow): boolean {
    return this.start <= other.end && this.end >= other.start;
  }

  /** The smallest window covering both. */
  cover(other: TimeWindow): TimeWindow {
    return new TimeWindow(Math.min(this.start, other.start), Math.max(this.end, other.end));
  }

  equals(other: Window): boolean {
    return other instanceof TimeWindow && other.start === this.start && other.end === this.end;
  }

  toString(): string {
    return `TimeWindow{start=${this.start}, end=${this.end}}`;
  }
}

/** The one window of GlobalWindows: it never ends, so only a trigger (e.g. a count) fires it. */
export class GlobalWindow {
  static readonly INSTANCE = new GlobalWindow();

  private constructor() {}

  maxTimestamp(): number {
    return Number.POSITIVE_INFINITY;
  }

  equals(other: Window): boolean {
    return other === this;
  }

  toString(): string {
    return 'GlobalWindow';
  }
}

export type Window = TimeWindow | GlobalWindow;

const GLOBAL_NAMESPACE = 'global';

/** @internal The window as a state and timer namespace: `start:end`, or `global`. */
export function windowNamespace(window: Window): string {
  return window instanceof TimeWindow ? `${window.start}:${window.end}` : GLOBAL_NAMESPACE;
}

/** @internal The window a namespace names (the inverse of {@link windowNamespace}). */
export function windowOfNamespace(namespace: string): Window {
  if (namespace === GLOBAL_NAMESPACE) return GlobalWindow.INSTANCE;
  const separator = namespace.indexOf(':', 1);
  return new TimeWindow(Number(namespace.slice(0, separator)), Number(namespace.slice(separator + 1)));
}

/**
 * The start of the window of `size` (shifted by `offset`) that holds `timestamp` (Flink's
 * TimeWindow.getWindowStartWithOffset), for negative timestamps too.
 */
export function windowStartWithOffset(timestamp: number, offset: number, size: number): number {
  const remainder = (timestamp - offset) % size;
  return remainder < 0 ? timestamp - (remainder + size) : timestamp - remainder;
}
