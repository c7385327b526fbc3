import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { DEAD_LETTER_TAG, type DeadLetterRecord, describeError, previewBytes, type RecordErrorPolicy, recordBytes } from '../../core/functions/dead-letter.ts';
import type { MetricCounter } from '../../core/metrics/metric-group.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';

/**
 * What an operator does when its user function throws on a record (Kafka Streams'
 * ProcessingExceptionHandler): 'fail' (the default) fails the task with an error naming the
 * operator, the record and where in the job it was thrown; 'skip' drops the record and counts it
 * (recordsSkipped); { deadLetterTopic } sends it to the operator's dead-letter side output and counts it
 * (deadLetters). Only the failing call costs anything: the happy path is the operator's own loop.
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
    const context = this.#context;
    if (this.policy === 'fail' || error instanceof WeirError) throw this.#failure(error, record, timestamp);
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
      if (!context.output(DEAD_LETTER_TAG, letter, timestamp ?? Number.NaN)) throw this.#failure(error, record, timestamp);
    }
    this.#counter?.inc();
  }

  #failure(error: unknown, record: unknown, timestamp: number | undefined): unknown {
    if (error instanceof WeirError) return error;
    const message = error instanceof Error ? error.message : String(error);
    const time = timestamp === undefined || Number.isNaN(timestamp) ? '' : `event time ${timestamp}, `;
    const failure = new WeirError(
      'RECORD_FAILED',
      `operator "${this.#context.operatorName}" (${this.#context.subtaskIndex + 1}/${this.#context.parallelism}) failed on a record (${time}value ${previewBytes(recordBytes(record))}): ${withUserCodeLocation(message, error instanceof Error ? error.stack : undefined)}`,
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
