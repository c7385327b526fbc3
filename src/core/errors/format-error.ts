import { WeirError } from './weir-error.ts';

/** The one-line-plus-hint form the CLI prints. */
export function formatError(error: unknown): string {
  if (error instanceof WeirError) {
    return error.hint === undefined ? `weir: ${error.message}` : `weir: ${error.message}\nhint: ${error.hint}`;
  }
  if (error instanceof Error) return `weir: internal error: ${error.stack ?? error.message}${innerErrors(error, 1)}`;
  return `weir: internal error: ${String(error)}`;
}

/** What an AggregateError holds (a Kafka client's answer with error codes: each code's id and message), indented, a few levels deep. */
function innerErrors(error: Error, depth: number): string {
  if (!(error instanceof AggregateError) || depth > 3) return '';
  return error.errors
    .slice(0, 8)
    .map((inner: unknown) => {
      if (!(inner instanceof Error)) return `\n${'  '.repeat(depth)}caused by: ${String(inner)}`;
      const id = (inner as { apiId?: unknown }).apiId;
      return `\n${'  '.repeat(depth)}caused by: ${typeof id === 'string' ? `${id}: ` : ''}${inner.message}${innerErrors(inner, depth + 1)}`;
    })
    .join('');
}
