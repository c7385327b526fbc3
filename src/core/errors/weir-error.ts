import type { ErrorCode } from './error-code.ts';

/**
 * Weir's one error type. Every error says whose fault it is, whether a retry can help, and how to
 * fix it, so the CLI can print one clear line plus a hint and exit non-zero.
 *
 * Errors that cross a worker-thread boundary travel as {@link SerializedWeirError} (a structured
 * clone loses the class) and are rebuilt with {@link WeirError.fromSerialized}.
 */

/** Whose fault an error is: the user's input or configuration, an outside system, or Weir's. */
export type Fault = 'user' | 'external' | 'internal';

export interface WeirErrorOptions {
  /** What to do about it, shown on its own line after the message. */
  hint?: string | undefined;
  fault?: Fault;
  /** Whether trying the same thing again can succeed. */
  retriable?: boolean;
  cause?: unknown;
}

export interface SerializedWeirError {
  name: string;
  code: ErrorCode;
  message: string;
  hint: string | undefined;
  fault: Fault;
  retriable: boolean;
  stack: string | undefined;
}

export class WeirError extends Error {
  /** What happened, from the one list of codes ({@link ErrorCode}). */
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly fault: Fault;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: WeirErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'WeirError';
    this.code = code;
    this.hint = options.hint;
    this.fault = options.fault ?? 'user';
    this.retriable = options.retriable ?? false;
  }

  serialize(): SerializedWeirError {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      hint: this.hint,
      fault: this.fault,
      retriable: this.retriable,
      stack: this.stack,
    };
  }

  static fromSerialized(data: SerializedWeirError): WeirError {
    const error = new WeirError(data.code, data.message, {
      hint: data.hint,
      fault: data.fault,
      retriable: data.retriable,
    });
    if (data.stack !== undefined) error.stack = data.stack;
    return error;
  }
}
