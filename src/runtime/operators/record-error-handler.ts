import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { DEAD_LETTER_TAG, type DeadLetterRecord, describeError, previewBytes, type RecordErrorPolicy, recordBytes } from '../../core/functions/dead-letter.ts';
import type { MetricCounter } from '../../core/metrics/metric-group.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import type { StateKey } from '../../core/state/state-key.ts';
import { decodeKey } from '../../state/composite-key.ts';

/**
 * What an operator does when its user function throws on a record, or in a call for no one record
 * (a timer, a window's firing) (Kafka Streams' ProcessingExceptionHandler, which covers
 * punctuators too): 'fail' (the default) fails the task with an error naming the operator, the
 * record (or the timer or window) and where in the job it was thrown; 'skip' drops what the call
 * emitted and counts it (recordsSkipped); { deadLetterTopic } sends the record (or the timer's or
 * window's key and time) to the operator's dead-letter side output and counts it (deadLetters).
 * Only the failing call costs anything: the happy path is the operator's own loop.
 */
export class RecordErrorHandler {
  readonly policy: RecordErrorPolicy;
  #context!: OperatorContext;
  #counter: MetricCounter | undefined;

  constructor(policy: RecordErrorPolicy = 'fail') {
    this.policy = policy;
  }

  open(context: OperatorContext): void {
    this.#context = context;
    if (this.policy === 'skip') this.#counter = context.metrics.counter('recordsSkipped');
    if (typeof this.policy === 'object') this.#counter = context.metrics.counter('deadLetters');
  }

  /** The function threw `error` on `record` (event time `timestamp`, NaN or undefined: none): throws under 'fail', else skips or dead-letters it. */
  onError(error: unknown, record: unknown, timestamp: number | undefined): void {
    this.#handle(error, record, timestamp, undefined);
  }

  /**
   * A call for no one record threw: a timer's onTimer, a window's firing (its aggregate's result or
   * its window function). `what` names it for the error ("the event-time timer at 1000 of key
   * \"k\""); `subject` is what a dead letter holds instead of a record ({ key, timer } or { key, window }).
   */
  onCallError(error: unknown, what: string, subject: Record<string, unknown>, timestamp: number | undefined): void {
    this.#handle(error, subject, timestamp, what);
  }

  #handle(error: unknown, record: unknown, timestamp: number | undefined, what: string | undefined): void {
    const context = this.#context;
    if (this.policy === 'fail' || error instanceof WeirError) throw this.#failure(error, record, timestamp, what);
    if (typeof this.policy === 'object') {
      const letter: DeadLetterRecord = {
        topic: this.policy.deadLetterTopic,
        key: null,
        value: recordBytes(record),
        headers: [],
        origin: undefined,
        timestamp: timestamp ?? Number.NaN,
        operatorUid: context.uid,
        operatorName: context.operatorName,
        ...describeError(error),
      };
      if (!context.output(DEAD_LETTER_TAG, letter, timestamp ?? Number.NaN)) throw this.#failure(error, record, timestamp, what);
    }
    this.#counter?.inc();
  }

  #failure(error: unknown, record: unknown, timestamp: number | undefined, what: string | undefined): unknown {
    if (error instanceof WeirError) return error;
    const message = error instanceof Error ? error.message : String(error);
    const time = timestamp === undefined || Number.isNaN(timestamp) ? '' : `event time ${timestamp}, `;
    const subject = what ?? `a record (${time}value ${previewBytes(recordBytes(record))})`;
    const failure = new WeirError(
      'RECORD_FAILED',
      `operator "${this.#context.operatorName}" (${this.#context.subtaskIndex + 1}/${this.#context.parallelism}) failed on ${subject}: ${withUserCodeLocation(message, error instanceof Error ? error.stack : undefined)}`,
      {
        hint: "fix the function; or give the operator onError: 'skip' (count and drop such records) or { deadLetter: { topic } } (send them to a topic)",
        fault: 'user',
        cause: error,
      },
    );
    if (error instanceof Error && error.stack !== undefined) failure.stack = error.stack;
    return failure;
  }
}

/** A key as an error names it: a string quoted, a composite as its parts, anything else as it prints. */
export function keyText(key: StateKey): string {
  const shown = decodeKey(key);
  if (typeof shown === 'object') return JSON.stringify(shown, (_field, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value));
  return typeof shown === 'string' ? JSON.stringify(shown) : String(shown);
}
