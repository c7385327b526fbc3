import { z } from 'zod';
import { WeirError } from '../../core/errors/weir-error.ts';

/**
 * The `_metadata` file of a checkpoint or savepoint: what a restore needs to find every operator's
 * state. It is written last and atomically, so a checkpoint folder without it does not exist.
 *
 * Version policy (see docs/checkpoint-storage.md): `version` rises whenever an older Weir would
 * misread the file; a Weir reads every version up to {@link CHECKPOINT_METADATA_VERSION} and
 * refuses newer ones with a clear error instead of guessing. Version 2: incremental checkpoints
 * (`keyedChanges`, handles in an earlier checkpoint's folder); a checkpoint without them is still
 * written as version 1, so an older Weir restores it.
 */
export const CHECKPOINT_METADATA_VERSION = 2;

/** The name of the metadata file inside a checkpoint or savepoint folder. */
export const METADATA_FILE_NAME = '_metadata';

/** Where one snapshot's bytes are, and how to know they are intact. */
export interface StateHandle {
  /** Relative to the checkpoint's (or savepoint's) folder. */
  path: string;
  /** In bytes. */
  size: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  /**
   * The checkpoint whose folder holds the file, when it is an earlier one (incremental checkpoints
   * share files): the folder `chk-<checkpoint>` beside this one. Metadata version 2.
   */
  checkpoint?: number;
}

export interface SubtaskStateMetadata {
  subtaskIndex: number;
  /** The keyed state snapshot; with incremental checkpoints, the full one the changes add to. */
  keyed?: StateHandle;
  /** Incremental checkpoints: the changes since `keyed`, oldest first (restored in this order after it). Metadata version 2. */
  keyedChanges?: StateHandle[];
  operator?: StateHandle;
}

export interface OperatorStateMetadata {
  /** The operator's stable uid: how state finds its operator again after the job changes. */
  uid: string;
  name: string;
  parallelism: number;
  subtasks: SubtaskStateMetadata[];
}

export interface CheckpointMetadata {
  version: 1 | 2;
  kind: 'checkpoint' | 'savepoint';
  jobName: string;
  checkpointId: number;
  /** Epoch milliseconds. */
  triggeredAt: number;
  /** Epoch milliseconds. */
  completedAt: number;
  maxParallelism: number;
  operators: OperatorStateMetadata[];
  /** free-form, e.g. the sink's notes */
  properties: Record<string, unknown>;
}

/** A relative path that stays inside its folder: no empty, `.` or `..` segment, no backslash. */
const relativePathSchema = z
  .string()
  .min(1)
  .refine((path) => !path.includes('\\') && !path.includes('\0') && path.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..'), {
    message: 'expected a path relative to the checkpoint folder that stays inside it',
  });

export const stateHandleSchema = z.object({
  path: relativePathSchema,
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits'),
  checkpoint: z.number().int().positive().optional(),
});

export const subtaskStateMetadataSchema = z.object({
  subtaskIndex: z.number().int().nonnegative(),
  keyed: stateHandleSchema.optional(),
  keyedChanges: z.array(stateHandleSchema).optional(),
  operator: stateHandleSchema.optional(),
});

export const operatorStateMetadataSchema = z.object({
  uid: z.string().min(1),
  name: z.string(),
  parallelism: z.number().int().positive(),
  subtasks: z.array(subtaskStateMetadataSchema),
});

export const checkpointMetadataSchema = z
  .object({
    version: z.union([z.literal(1), z.literal(2)]),
    kind: z.enum(['checkpoint', 'savepoint']),
    jobName: z.string(),
    checkpointId: z.number().int().positive(),
    triggeredAt: z.number().nonnegative(),
    completedAt: z.number().nonnegative(),
    maxParallelism: z.number().int().positive(),
    operators: z.array(operatorStateMetadataSchema),
    properties: z.record(z.string(), z.unknown()),
  })
  .superRefine((metadata, context) => {
    const uids = new Set<string>();
    metadata.operators.forEach((operator, operatorIndex) => {
      if (uids.has(operator.uid)) {
        context.addIssue({ code: 'custom', path: ['operators', operatorIndex, 'uid'], message: `operator uid "${operator.uid}" appears twice` });
      }
      uids.add(operator.uid);
      if (operator.parallelism > metadata.maxParallelism) {
        context.addIssue({
          code: 'custom',
          path: ['operators', operatorIndex, 'parallelism'],
          message: `parallelism ${operator.parallelism} is above maxParallelism ${metadata.maxParallelism}`,
        });
      }
      const subtasks = new Set<number>();
      operator.subtasks.forEach((subtask, subtaskPosition) => {
        const path = ['operators', operatorIndex, 'subtasks', subtaskPosition, 'subtaskIndex'];
        if (subtask.subtaskIndex >= operator.parallelism) {
          context.addIssue({ code: 'custom', path, message: `subtask ${subtask.subtaskIndex} is not below the parallelism ${operator.parallelism}` });
        }
        if (subtasks.has(subtask.subtaskIndex)) context.addIssue({ code: 'custom', path, message: `subtask ${subtask.subtaskIndex} appears twice` });
        subtasks.add(subtask.subtaskIndex);
      });
    });
  }) satisfies z.ZodType<CheckpointMetadata>;

/** The metadata version a checkpoint needs: 2 when it shares files with earlier ones (incremental), else 1 (older Weirs read it). */
export function metadataVersionFor(operators: readonly OperatorStateMetadata[]): 1 | 2 {
  const shares = operators.some((operator) =>
    operator.subtasks.some(
      (subtask) => subtask.keyedChanges !== undefined || subtask.keyed?.checkpoint !== undefined || subtask.operator?.checkpoint !== undefined,
    ),
  );
  return shares ? 2 : 1;
}

/** Every state file a checkpoint's metadata names, each with the checkpoint whose folder holds it (undefined: its own). */
export function stateFilesOf(metadata: Pick<CheckpointMetadata, 'operators'>): StateHandle[] {
  return metadata.operators.flatMap((operator) =>
    operator.subtasks.flatMap((subtask) => [subtask.keyed, ...(subtask.keyedChanges ?? []), subtask.operator].filter((handle) => handle !== undefined)),
  );
}

/** `operators[0].subtasks[1].keyed.sha256: expected 64 lowercase hex digits; ...` (the first few issues). */
export function describeSchemaIssues(error: z.ZodError, limit = 3): string {
  const described = error.issues.slice(0, limit).map((issue) => {
    let path = '';
    for (const key of issue.path) path += typeof key === 'number' ? `[${key}]` : path === '' ? String(key) : `.${String(key)}`;
    return `${path === '' ? '(top level)' : path}: ${issue.message}`;
  });
  const more = error.issues.length - limit;
  return more > 0 ? `${described.join('; ')} (and ${more} more)` : described.join('; ');
}

/**
 * Parses the text of a `_metadata` file (`file` names it in errors): JSON, then the version, then
 * the schema. Throws CHECKPOINT_METADATA_CORRUPT or CHECKPOINT_METADATA_TOO_NEW.
 */
export function parseCheckpointMetadata(text: string, file: string): CheckpointMetadata {
  const corrupt = (details: string, cause?: unknown) =>
    new WeirError('CHECKPOINT_METADATA_CORRUPT', `${file} is corrupt: ${details}`, {
      fault: 'external',
      hint: 'it was damaged on disk or not written by Weir; restore from another checkpoint or savepoint',
      cause,
    });
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw corrupt(`not valid JSON (${error instanceof Error ? error.message : String(error)})`, error);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw corrupt('expected a JSON object');
  const version = (json as { version?: unknown }).version;
  if (typeof version === 'number' && Number.isInteger(version) && version > CHECKPOINT_METADATA_VERSION) {
    throw new WeirError('CHECKPOINT_METADATA_TOO_NEW', `${file} has metadata version ${version}, newer than this Weir reads (${CHECKPOINT_METADATA_VERSION})`, {
      fault: 'user',
      hint: `use a newer Weir (one that reads metadata version ${version})`,
    });
  }
  const parsed = checkpointMetadataSchema.safeParse(json);
  if (!parsed.success) throw corrupt(describeSchemaIssues(parsed.error), parsed.error);
  return parsed.data;
}
