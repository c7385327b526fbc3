import type { ErrorCode } from '../../core/errors/error-code.ts';
import { WeirError } from '../../core/errors/weir-error.ts';

/** The setting every storage problem points at. */
export const STORAGE_SETTING = 'checkpointing.storage';

export function hasCode(error: unknown, ...codes: string[]): boolean {
  return error instanceof Error && codes.includes((error as NodeJS.ErrnoException).code ?? '');
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A disk problem: names the path and what the operating system said. */
export function storageIoError(code: ErrorCode, what: string, cause: unknown, retriable = false): WeirError {
  const full = hasCode(cause, 'ENOSPC', 'EDQUOT');
  return new WeirError(code, `${what}: ${errorMessage(cause)}`, {
    fault: 'external',
    retriable,
    hint: full ? `the disk is full: free space or point ${STORAGE_SETTING} at a larger disk` : `check that ${STORAGE_SETTING} is on a healthy, writable disk`,
    cause,
  });
}
