import type { TaskMetrics } from '../metrics/task-metrics.ts';
import type { Mail } from './mail.ts';

/** What processing one piece of input gave (Flink's DataInputStatus). */
export type InputStatus =
  /** Input was processed; there may be more. */
  | 'MORE_AVAILABLE'
  /** Nothing to process now: the loop sleeps until {@link MailboxProcessor.resume} (input arrived, credit came back). */
  | 'NOTHING_AVAILABLE'
  /** Nothing now from a source that has to be asked again: the loop polls again shortly; the wait is not busy time. */
  | 'POLL_LATER'
  /**
   * The input has nothing more for now and will not be polled by itself (a finished source, or one
   * stopped by a stopping savepoint): mails run, and the input is asked again after each wake-up
   * (a stopped source reads on once its savepoint is aborted).
   */
  | 'END_OF_INPUT';

/** The task's input, which the loop runs whenever no mail waits (Flink's MailboxDefaultAction). */
export interface MailboxDefaultAction {
  processInput(): Promise<InputStatus>;
}

export interface MailboxProcessorOptions {
  input: MailboxDefaultAction;
  runMail: (mail: Mail) => Promise<void>;
  /** False while an output channel has no credit: the loop takes no input then (back pressure). */
  outputsAvailable: () => boolean;
  metrics: TaskMetrics;
  onFailure: (error: unknown) => void;
  /** Input steps per turn of the loop before it yields to the event loop (so channel messages get in). */
  maxInputSteps: number;
}

/** How long a source that had nothing waits before it is polled again. */
const POLL_INTERVAL_MS = 2;

/**
 * The longest a turn of the loop takes input before it yields to the event loop. Channel messages
 * from other workers (records, barriers, credits) and socket answers (a sink's acknowledgements)
 * get in only between turns: an operator whose steps never wait on I/O would otherwise keep them
 * out for maxInputSteps steps, seconds for slow functions, and hold back a barrier that long.
 */
const MAX_TURN_MS = 5;

/**
 * The single loop of a task (Flink's MailboxProcessor): mails first (checkpoint triggers and
 * notifications, timers), then input, a bounded number of steps at a time, and no input while an
 * output channel is out of credit. Everything a task does runs here, one thing at a time, so its
 * operators and state are never touched concurrently. A failure stops the loop for good.
 */
export class MailboxProcessor {
  readonly #options: MailboxProcessorOptions;
  readonly #mails: Mail[] = [];
  #running = false;
  #started = false;
  #failed = false;
  #closed = false;
  #pollTimer: NodeJS.Timeout | undefined;

  constructor(options: MailboxProcessorOptions) {
    this.#options = options;
  }

  /** Starts the loop: until then mails wait and nothing runs (an operator opening may already queue mails). */
  start(): void {
    this.#started = true;
    this.resume();
  }

  /** Queues a mail and wakes the loop. */
  put(mail: Mail): void {
    this.#mails.push(mail);
    this.resume();
  }

  /** Wakes the loop (input arrived, credit came back, or the task starts). */
  resume(): void {
    if (this.#running || !this.#started || this.#failed || this.#closed) return;
    this.#running = true;
    setImmediate(() => {
      this.#runLoop().catch((error: unknown) => this.#fail(error));
    });
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#pollTimer);
  }

  get failed(): boolean {
    return this.#failed;
  }

  async #runLoop(): Promise<void> {
    const { input, runMail, outputsAvailable, metrics, maxInputSteps } = this.#options;
    let steps = 0;
    let idleMs = 0;
    const started = performance.now();
    try {
      while (!this.#failed && !this.#closed) {
        const mail = this.#mails.shift();
        if (mail !== undefined) {
          await runMail(mail);
          continue;
        }
        if (!outputsAvailable()) {
          metrics.backPressured(Date.now());
          return; // resumed when credit comes back
        }
        const polledAt = performance.now();
        const status = await input.processInput();
        if (status === 'MORE_AVAILABLE') {
          if (++steps >= maxInputSteps || performance.now() - started >= MAX_TURN_MS) break; // let channel messages in
          continue;
        }
        if (status === 'POLL_LATER') {
          idleMs += performance.now() - polledAt; // waiting on an empty source is not busy
          this.#pollTimer = setTimeout(() => this.resume(), POLL_INTERVAL_MS);
        }
        return;
      }
    } finally {
      this.#running = false;
      metrics.busyMs += performance.now() - started - idleMs;
    }
    this.resume();
  }

  #fail(error: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#options.onFailure(error);
  }
}
