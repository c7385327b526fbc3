/** A timer of an {@link AsyncTimerService}: Node's handle for real timers, the service's own for another clock. */
export type AsyncTimer = NodeJS.Timeout | { readonly due: number };

/**
 * Where an async I/O operator's timeouts and retry delays run (Flink's AsyncWaitOperator takes
 * them from its ProcessingTimeService). In a task: real timers, which fire even while the task's
 * loop waits inside the operator for room (its capacity full) or for the end of its queue. In the
 * test driver: the driver's processing time, which moves only when the test moves it.
 * `callback(arg)` runs once, `delayMs` from now, unless cancelled; the argument spares the operator
 * a closure per record.
 */
export interface AsyncTimerService {
  schedule<T>(delayMs: number, callback: (arg: T) => void, arg: T): AsyncTimer;
  cancel(timer: AsyncTimer | undefined): void;
}

/** Real timers (`setTimeout`): what every task runs. */
export const realAsyncTimers: AsyncTimerService = {
  schedule: (delayMs, callback, arg) => setTimeout(callback, delayMs, arg),
  cancel: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};
