/**
 * An error as it crosses between threads (a structured clone keeps neither an Error's class nor
 * its `code`): its message and errno-style code, and the Error made again on the other side. The
 * flush thread's failed writes and the main thread's lmdb copies answer with it.
 */
export interface ThreadFailure {
  message: string;
  code?: string;
}

/** What `error` says, to post to another thread. */
export function describeThreadFailure(error: unknown): ThreadFailure {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return { message: (error as Error | undefined)?.message ?? String(error), ...(typeof code === 'string' ? { code } : {}) };
}

/** The Error a failure posted by another thread stands for (its code kept, so the disk's errors are still told apart). */
export function threadFailureError(failure: ThreadFailure): Error {
  return Object.assign(new Error(failure.message), failure.code === undefined ? {} : { code: failure.code });
}
