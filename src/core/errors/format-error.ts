import { WeirError } from './weir-error.ts';

/** The one-line-plus-hint form the CLI prints. */
export function formatError(error: unknown): string {
  if (error instanceof WeirError) {
    return error.hint === undefined ? `weir: ${error.message}` : `weir: ${error.message}\nhint: ${error.hint}`;
  }
  if (error instanceof Error) return `weir: internal error: ${error.stack ?? error.message}`;
  return `weir: internal error: ${String(error)}`;
}
