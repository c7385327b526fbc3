import { WeirError } from '../../core/errors/weir-error.ts';

/** SQLSTATE codes the sink acts on. */
export const SQLSTATE = {
  /** undefined_object: COMMIT/ROLLBACK PREPARED of a gid that is not prepared (any more). */
  undefinedObject: '42704',
  undefinedTable: '42P01',
  insufficientPrivilege: '42501',
  /** object_not_in_prerequisite_state: PREPARE TRANSACTION with max_prepared_transactions = 0. */
  notInPrerequisiteState: '55000',
} as const;

/** The SQLSTATE of a PostgreSQL error (pg's DatabaseError), if it is one. */
export function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The error's own words, with its SQLSTATE and detail when PostgreSQL gave them. */
export function describePostgresError(error: unknown): string {
  const failure = error as { message?: string; detail?: string; code?: string };
  const state = sqlStateOf(error);
  const message = failure?.message ?? String(error);
  return `${message}${state === undefined ? (failure?.code === undefined ? '' : ` (${failure.code})`) : ` (SQLSTATE ${state})`}${failure?.detail ? `: ${failure.detail}` : ''}`;
}

/**
 * A failed request as the task fails with it. Errors of the data or the schema (SQLSTATE classes
 * 22, 23, 42: a value the column does not take, a constraint, a missing column or right) are the
 * user's and no retry helps; everything else (the connection lost, the server shutting down,
 * serialization and resource failures) is the database's: the job restarts as its restart strategy
 * allows, and what was prepared is committed or rolled back by the recovery.
 */
export function postgresFailure(where: string, what: string, error: unknown): WeirError {
  if (error instanceof WeirError) return error;
  const state = sqlStateOf(error);
  const userFault = state !== undefined && /^(22|23|42)/.test(state);
  return new WeirError('TASK_FAILED', `${where}: ${what} failed: ${describePostgresError(error)}`, {
    fault: userFault ? 'user' : 'external',
    retriable: !userFault,
    hint: userFault
      ? "fix the rows toRow returns or the table (columns, types, constraints, the role's rights)"
      : 'check that PostgreSQL is up and reachable; the job restarts from its latest checkpoint',
    cause: error,
  });
}
