import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { WeirError } from '../errors.ts';
import { parseDuration } from '../util/duration.ts';

/** A duration option: milliseconds, or text such as `100ms`, `10s`, `15m`. */
const duration = (setting: string) =>
  z.union([z.number(), z.string()]).transform((value, context) => {
    try {
      return parseDuration(value, setting);
    } catch (error) {
      context.addIssue({ code: 'custom', message: error instanceof WeirError ? `${error.message} (${error.hint})` : String(error) });
      return z.NEVER;
    }
  });

const positiveInt = z.number().int().min(1);

export const checkpointingSchema = z
  .object({
    /** Time between the end of one trigger and the next; a number of ms or text like `500ms`. */
    interval: duration('checkpointing.interval').refine((value) => value > 0, 'must be above 0'),
    mode: z.enum(['exactly-once', 'at-least-once']).default('exactly-once'),
    /** A checkpoint not completed in this time is aborted. */
    timeout: duration('checkpointing.timeout').default(10 * 60 * 1000),
    /** The least time between the end of one checkpoint and the start of the next. */
    minPause: duration('checkpointing.minPause').default(0),
    maxConcurrent: positiveInt.default(1),
    /** How many checkpoint failures in a row the job tolerates before it fails (and restarts). */
    tolerableFailures: z.number().int().min(0).default(0),
    /** How many completed checkpoints are kept on disk. */
    retained: positiveInt.default(1),
    /** The checkpoint folder of this job. */
    storage: z.string().min(1),
  })
  .strict();

export const restartStrategySchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('none') }).strict(),
  z.object({ type: z.literal('fixed-delay'), attempts: positiveInt, delay: duration('restartStrategy.delay').default(1000) }).strict(),
  z
    .object({
      type: z.literal('exponential-delay'),
      initialBackoff: duration('restartStrategy.initialBackoff').default(1000),
      maxBackoff: duration('restartStrategy.maxBackoff').default(60_000),
      multiplier: z.number().min(1).default(2),
      /** Back to the initial backoff after running this long without failure. */
      resetBackoffThreshold: duration('restartStrategy.resetBackoffThreshold').default(60 * 60 * 1000),
      jitter: z.number().min(0).max(1).default(0.1),
      attempts: positiveInt.optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('failure-rate'),
      maxFailuresPerInterval: positiveInt,
      failureRateInterval: duration('restartStrategy.failureRateInterval'),
      delay: duration('restartStrategy.delay').default(1000),
    })
    .strict(),
]);

export const environmentConfigSchema = z
  .object({
    /** Default parallelism of every operator. */
    parallelism: positiveInt.default(1),
    /** The number of key groups: the most a keyed operator can ever be scaled to. Fixed for the life of a job. */
    maxParallelism: positiveInt.max(32768).default(128),
    /** Worker threads the subtasks are spread over. */
    workers: positiveInt.default(availableParallelism()),
    /** Records per batch that a source emits and channels carry. */
    batchSize: positiveInt.default(512),
    /** Batches a channel may have in flight before its sender waits (credit-based backpressure). */
    channelCredits: positiveInt.default(4),
    checkpointing: checkpointingSchema.optional(),
    restartStrategy: restartStrategySchema.default({ type: 'fixed-delay', attempts: 3, delay: 1000 }),
  })
  .strict()
  .superRefine((config, context) => {
    if (config.maxParallelism < config.parallelism) {
      context.addIssue({
        code: 'custom',
        path: ['maxParallelism'],
        message: `maxParallelism (${config.maxParallelism}) is below parallelism (${config.parallelism}); raise maxParallelism, which is fixed for the life of a job`,
      });
    }
  });

export type EnvironmentConfigInput = z.input<typeof environmentConfigSchema>;
export type EnvironmentConfig = z.output<typeof environmentConfigSchema>;
export type CheckpointingConfig = z.output<typeof checkpointingSchema>;
export type RestartStrategyConfig = z.output<typeof restartStrategySchema>;

/** Validates the environment's options: one clear error naming every bad setting. */
export function parseEnvironmentConfig(input: unknown): EnvironmentConfig {
  const result = environmentConfigSchema.safeParse(input ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(options)'}: ${issue.message}`);
  throw new WeirError('INVALID_CONFIG', `invalid job configuration: ${problems.join('; ')}`, {
    hint: 'fix the named settings; docs/configuration.md lists every option',
  });
}
