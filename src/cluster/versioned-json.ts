import type { z } from 'zod';

/** Why versioned JSON did not read: a version newer than this Weir's, or not the format at all. */
export type VersionedJsonProblem = { kind: 'too-new'; version: number } | { kind: 'unreadable'; issue: string };

/**
 * Reads JSON bytes of a versioned format (cluster mode's member protocol, its task checkpoints):
 * the value the schema accepts, or `refuse` is called with what is wrong, telling a newer version
 * apart from bytes that are not the format, so each caller says it in its own words.
 */
export function decodeVersionedJson<S extends z.ZodType>(
  schema: S,
  bytes: Buffer,
  currentVersion: number,
  refuse: (problem: VersionedJsonProblem) => Error,
): z.infer<S> {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const version = (value as { version?: unknown } | undefined)?.version;
  throw refuse(
    typeof version === 'number' && version > currentVersion
      ? { kind: 'too-new', version }
      : { kind: 'unreadable', issue: value === undefined ? 'not JSON' : (parsed.error.issues[0]?.message ?? 'unreadable') },
  );
}
