/**
 * Whether a hook returned a promise. Operators and readers may answer synchronously or not; the
 * task awaits only what is a promise, so a synchronous chain costs no microtask per batch.
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';
}
