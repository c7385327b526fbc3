import type { AsyncTimer, AsyncTimerService } from '../runtime/operators/async-timer-service.ts';

/** One timer on the driver's clock. */
class DriverTimer {
  readonly due: number;
  /** The order it was set in: timers due at the same time fire in it. */
  readonly seq: number;
  callback: ((arg: unknown) => void) | undefined;
  readonly arg: unknown;

  constructor(due: number, seq: number, callback: (arg: unknown) => void, arg: unknown) {
    this.due = due;
    this.seq = seq;
    this.callback = callback;
    this.arg = arg;
  }
}

/**
 * An async I/O operator's timeouts and retry delays on the test driver's processing time: they
 * fire when the test moves it past them ({@link JobTestDriver.advanceProcessingTime}), in time order,
 * and at once, as real timers do, not through the operator's mails.
 */
export class DriverTimers implements AsyncTimerService {
  readonly #clock: () => number;
  /** Pending timers by (due, seq); cancelled ones are dropped when they reach the front. */
  readonly #timers: DriverTimer[] = [];
  #seq = 0;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  schedule<T>(delayMs: number, callback: (arg: T) => void, arg: T): AsyncTimer {
    const timer = new DriverTimer(this.#clock() + Math.max(0, delayMs), this.#seq++, callback as (arg: unknown) => void, arg);
    const timers = this.#timers;
    // Timeouts come in time order: the common case appends.
    let at = timers.length;
    while (at > 0 && (timers[at - 1] as DriverTimer).due > timer.due) at--;
    timers.splice(at, 0, timer);
    return timer;
  }

  cancel(timer: AsyncTimer | undefined): void {
    if (timer instanceof DriverTimer) timer.callback = undefined;
  }

  /** When the next timer is due; undefined: none. */
  get nextDue(): number | undefined {
    const timers = this.#timers;
    while (timers.length > 0 && (timers[0] as DriverTimer).callback === undefined) timers.shift();
    return timers[0]?.due;
  }

  /** Runs every timer due at or before `now`, in time order (and those they set that are due too). */
  fire(now: number): void {
    for (let next = this.nextDue; next !== undefined && next <= now; next = this.nextDue) {
      const timer = this.#timers.shift() as DriverTimer;
      const callback = timer.callback as (arg: unknown) => void;
      timer.callback = undefined;
      callback(timer.arg);
    }
  }
}
