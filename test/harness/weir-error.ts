import assert from 'node:assert/strict';
import type { ErrorCode } from '../../src/core/errors/error-code.ts';
import { WeirError } from '../../src/core/errors/weir-error.ts';

/**
 * For assert.throws/rejects: a WeirError with this code, a one-line message matching `message`, and
 * a hint (every error names its fix), matching `hint` when given.
 */
export function clearWeirError(code: ErrorCode, message: RegExp, hint?: RegExp): (error: unknown) => true {
  return (error: unknown) => {
    assert.ok(error instanceof WeirError, String(error));
    assert.equal(error.code, code, error.message);
    assert.match(error.message, message);
    assert.doesNotMatch(error.message, /\n/);
    assert.ok(error.hint !== undefined && error.hint.length > 0, 'an error names its fix');
    if (hint !== undefined) assert.match(error.hint, hint);
    return true;
  };
}
