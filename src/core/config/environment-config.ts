import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { WeirError } from '../errors/weir-error.ts';
import { parseDuration } from '../time/duration.ts';

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
    interval: duration('checkpointing.interval')
      .refine((value) => value > 0, 'must be above 0')
      .describe(
        'Time from the trigger of one checkpoint to the next (later while `maxConcurrent` checkpoints are pending or `minPause` has not passed). An exactly-once sink commits when a checkpoint completes, so this is also about how long its output takes to become visible.',
      ),
    mode: z
      .enum(['exactly-once', 'at-least-once'])
      .default('exactly-once')
      .describe(
        '`exactly-once`: barriers are aligned (an input that delivered barrier N waits for the others), so state counts every record once. `at-least-once`: no alignment; after a failure, state may count records twice and the output of exactly-once sinks may hold duplicates, since records that overtook a barrier belong to its checkpoint and are read again after a restore (the preflight warns when a sink is exactly-once).',
      ),
    timeout: duration('checkpointing.timeout')
      .default(10 * 60 * 1000)
      .describe('A checkpoint not completed in this time is aborted, and counts as a failure.'),
    minPause: duration('checkpointing.minPause').default(0).describe('The least time between the end of one checkpoint and the trigger of the next.'),
    maxConcurrent: positiveInt.default(1).describe('How many checkpoints may be pending at once.'),
    tolerableFailures: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe(
        "Checkpoint failures in a row the job tolerates; one more fails the job, which then restarts as `restartStrategy` allows. Only failures of a checkpoint itself count (it expired, a task could not snapshot or write its state, the metadata could not be written), never one a newer checkpoint made moot or the job's own stop or restart caused, nor a savepoint's (its caller hears of it).",
      ),
    unaligned: z.boolean().optional().meta({
      defaultText: 'false',
      description:
        "Unaligned checkpoints (Flink's FLIP-76), for jobs under back pressure: a checkpoint that could not align within `alignedCheckpointTimeout` goes unaligned, so its barrier overtakes the records queued in each task's input channels; those records are stored in the checkpoint as its channel state (in-flight records, per subtask and input channel) and replayed into the task before new input on restore, so the job stays exactly-once and a checkpoint no longer waits for the back pressure to clear. Needs `mode` exactly-once. Savepoints (and a stop's savepoint) are always aligned. A checkpoint that holds channel state restores only at the parallelism it was taken with: to rescale, take a savepoint and start from it.",
    }),
    alignedCheckpointTimeout: duration('checkpointing.alignedCheckpointTimeout').optional().meta({
      defaultText: '0 (unaligned from the first barrier)',
      description:
        "With `unaligned`: how long a checkpoint stays aligned (Flink's execution.checkpointing.aligned-checkpoint-timeout), counted from its trigger; a task whose barriers of it have not all been processed by then switches it to unaligned. 0: unaligned from the first barrier. Without `unaligned` it has no effect.",
    }),
    incremental: z.boolean().optional().meta({
      defaultText: 'false',
      description:
        "Incremental checkpoints (Flink's execution.checkpointing.incremental) for both state backends: a checkpoint writes each keyed subtask's changes since the latest completed checkpoint (the keys changed between barriers, with their values at the barrier; deletions as such), not its whole state; a restore reads the last full snapshot and the changes after it, oldest first. A full snapshot is written again when the changes since the last one add up to its size or after `incrementalMaxChanges` of them, so a restore reads at most about twice the state. A checkpoint shares the files of the earlier ones its changes add to: retention keeps those until no retained checkpoint needs them (`retained` then keeps more folders than it says). Savepoints are always full and self-contained (their completion is no base: the next checkpoint adds to the latest completed checkpoint). After a restart from a checkpoint of the same storage, a subtask at the same key groups adds its first checkpoint to the restored chain (a rescale or a savepoint starts with a full one). Takes `maxConcurrent` 1 (the default; more is refused). The disk backend reads the changed keys' values from the lmdb read transaction taken at the barrier, and its full snapshot is lmdb's own file, copied off the task thread, which a restore at the same parallelism opens instead of re-inserting every key; past its first full snapshot it writes each next one beside the chain (FLIP-158's materialization: the checkpoint still adds its changes, and later checkpoints complete while the file is written), and the first checkpoint after it is written starts a new chain on it. Not in cluster mode yet.",
    }),
    incrementalMaxChanges: positiveInt.max(1000).optional().meta({
      defaultText: '8',
      description:
        "With `incremental`: how many changes a full snapshot takes before the next snapshot is full again (Flink's changelog materialization, counted in checkpoints; a full snapshot also comes when the changes add up to its size). The disk backend then takes the next full snapshot beside the chain: the chain goes on while it is written, and the first checkpoint after it starts a new chain on it; the next is taken no sooner after it was written than it took (so at tens of millions of keys, where lmdb's file takes half a minute to copy, the chain holds more changes than this), and after 3 such snapshots failed in a row a checkpoint is full. More: fewer full snapshots, so fewer bytes written and, with the disk backend at tens of millions of keys, fewer long copies of its store; but a restore applies more changes after its full snapshot, so it takes longer. Without `incremental` it has no effect.",
    }),
    localRecovery: z.boolean().optional().meta({
      defaultText: 'false',
      description:
        "Local recovery (Flink's execution.state-recovery.from-local): each task's state files are also copied to this machine, under `<stateDir>/local-recovery/`, and a restart on the same machine reads each from its copy when the copy matches (size and SHA-256), not from `storage`: a job on S3 restores without downloading its state. The copies are a cache: one missing or damaged is read from `storage`, a copy that fails never fails a checkpoint, and they go with their checkpoints. Checkpoints only (a savepoint is read from where it is); one process (not yet in cluster mode). The disk backend reads its snapshot from the copy and loads it into a fresh working folder. Needs room for about one more checkpoint of state under `stateDir`.",
    }),
    retained: positiveInt
      .default(1)
      .describe(
        'How many completed checkpoints are kept on disk; older ones are deleted when a new one completes (with `incremental`, not while a kept one shares their files). Savepoints are never deleted.',
      ),
    storage: z
      .string()
      .min(1)
      .describe(
        'Where this job keeps its checkpoints: a folder, or `s3://<bucket>/<prefix>` (S3 or an S3-compatible store, configured as the AWS SDK is: AWS_REGION, AWS_ENDPOINT_URL, the credential chain). `chk-<N>/` per checkpoint, `savepoints/` (docs/checkpoint-storage.md). A new run resumes from its latest completed checkpoint (or a newer savepoint).',
      ),
  })
  .strict()
  .superRefine((config, context) => {
    if (config.unaligned && config.mode === 'at-least-once') {
      context.addIssue({
        code: 'custom',
        path: ['unaligned'],
        message:
          'unaligned checkpoints need mode exactly-once (at-least-once takes no alignment for them to skip); set checkpointing.mode to exactly-once or drop checkpointing.unaligned',
      });
    }
    if (config.incremental === true && config.maxConcurrent > 1) {
      context.addIssue({
        code: 'custom',
        path: ['maxConcurrent'],
        message: `${config.maxConcurrent} pending checkpoints at once do not go with incremental checkpoints yet (a checkpoint completing before the barrier of an earlier-triggered one that adds to an older base would drop changes that one needs); set checkpointing.maxConcurrent to 1 (the default) or turn checkpointing.incremental off`,
      });
    }
  });

export const restartStrategySchema = z.discriminatedUnion('type', [
  z
    .object({ type: z.literal('none') })
    .strict()
    .describe('The first failure fails the job.'),
  z
    .object({
      type: z.literal('fixed-delay'),
      attempts: positiveInt.describe('How many restarts this run allows in all.'),
      delay: duration('restartStrategy.delay').default(1000).describe('The wait before each restart.'),
    })
    .strict()
    .describe('Up to `attempts` restarts, each after `delay`.'),
  z
    .object({
      type: z.literal('exponential-delay'),
      initialBackoff: duration('restartStrategy.initialBackoff').default(1000).describe('The wait before the first restart.'),
      maxBackoff: duration('restartStrategy.maxBackoff').default(60_000).describe('The longest wait.'),
      multiplier: z.number().min(1).default(1.5).describe('Each wait is the one before times this.'),
      resetBackoffThreshold: duration('restartStrategy.resetBackoffThreshold')
        .default(60 * 60 * 1000)
        .describe(
          'A failure this long after the one before finds the job healthy: the wait goes back to `initialBackoff` and the count of `attemptsBeforeResetBackoff` starts again.',
        ),
      jitter: z.number().min(0).max(1).default(0.1).describe('A random change of each wait, as a fraction of it: 0.1 is up to 10% more or less.'),
      attemptsBeforeResetBackoff: positiveInt
        .default(20)
        .describe(
          'Restarts allowed in a row, each failure within `resetBackoffThreshold` of the one before; one more fails the job (a crash loop). Flink allows any number by default.',
        ),
      attempts: positiveInt.optional().describe('How many restarts this run allows in all; without it, no limit.'),
    })
    .strict()
    .describe(
      "Restarts with a growing wait (Flink's exponential-delay): `initialBackoff`, then times `multiplier` up to `maxBackoff`; back to `initialBackoff` once the job ran `resetBackoffThreshold` without failure; at most `attemptsBeforeResetBackoff` restarts in a row.",
    ),
  z
    .object({
      type: z.literal('failure-rate'),
      maxFailuresPerInterval: positiveInt.describe('Failures allowed within `failureRateInterval`; one more fails the job.'),
      failureRateInterval: duration('restartStrategy.failureRateInterval').describe('The sliding window the failures are counted in.'),
      delay: duration('restartStrategy.delay').default(1000).describe('The wait before each restart.'),
    })
    .strict()
    .describe('Restarts after `delay` while failures stay within `maxFailuresPerInterval` per `failureRateInterval`.'),
]);

export const environmentConfigSchema = z
  .object({
    parallelism: positiveInt.default(1).describe("Default parallelism of every operator; an operator's own `parallelism` option overrides it."),
    maxParallelism: positiveInt
      .max(32768)
      .default(128)
      .describe(
        'The number of key groups: the most a keyed operator can ever be scaled to. At least `parallelism`. Fixed for the life of a job: a checkpoint taken under another value is refused.',
      ),
    workers: positiveInt
      .default(availableParallelism())
      .meta({ description: 'Worker threads the subtasks are spread over.', defaultText: 'the number of cores (`os.availableParallelism()`)' }),
    workerHeap: z
      .object({
        youngGenerationMb: positiveInt
          .default(24)
          .describe(
            "The most each worker thread's young generation (V8's new space, where records are allocated) may grow to, in MB. V8's own default for a 64-bit machine lets it reach about 130 MB per thread, most of a job's memory; 24 MB keeps the throughput, while 12 MB promotes short-lived records and raises the peak (docs/benchmarks.md).",
          ),
        oldGenerationMb: positiveInt
          .optional()
          .describe(
            "The most each worker thread's old generation (where keyed state and long-lived objects live) may grow to, in MB. A worker that needs more fails with ERR_WORKER_OUT_OF_MEMORY and the job restarts from its latest checkpoint; without it, V8's limit (about 4 GB).",
          ),
      })
      .strict()
      .prefault({})
      .meta({
        description: "The V8 heap limits of each worker thread (Node's `resourceLimits`); the main thread runs no records and keeps Node's defaults.",
        defaultText: 'youngGenerationMb 24, oldGenerationMb: no limit',
      }),
    batchSize: positiveInt.default(512).describe('Records per batch that a source emits and channels carry.'),
    channelCredits: positiveInt.default(4).describe('Batches a channel may have in flight before its sender waits (credit-based backpressure).'),
    network: z
      .object({
        debloat: z
          .object({
            enabled: z
              .boolean()
              .default(true)
              .describe(
                "Buffer debloating (Flink's FLIP-183): under back pressure a channel's batches shrink so the records in flight before a barrier take about `target` to process. Off: every channel may hold `channelCredits` x `batchSize` records, which a barrier waits behind (Flink's default is off; Weir's is on).",
              ),
            target: duration('network.debloat.target')
              .refine((value) => value > 0, 'must be above 0')
              .default(1000)
              .describe(
                "How long the records in flight on a task's input should take it to process (Flink's taskmanager.network.memory.buffer-debloat.target): the time an aligned barrier waits behind them.",
              ),
            period: duration('network.debloat.period')
              .refine((value) => value > 0, 'must be above 0')
              .default(200)
              .describe("How much time each throughput sample covers (Flink's taskmanager.network.memory.buffer-debloat.period)."),
            samples: positiveInt
              .default(20)
              .describe("Samples the throughput is averaged over, exponentially (Flink's taskmanager.network.memory.buffer-debloat.samples)."),
            minBatchSize: positiveInt
              .default(8)
              .describe(
                "The smallest batch, in records, a channel or a source is sized down to (Flink's taskmanager.memory.min-segment-size); at most `batchSize`.",
              ),
          })
          .strict()
          .prefault({})
          .meta({
            description:
              "Buffer debloating: each channel's batches are sized from how fast its receiver consumes them (the credit it returns), so its `channelCredits` batches take about `target` to process (between `minBatchSize` and `batchSize`); a source's polls follow its channels and its own throughput. A barrier then waits about `target` behind a slow stage.",
            defaultText: 'on: target 1s, period 200ms, samples 20',
          }),
      })
      .strict()
      .prefault({})
      .meta({ description: 'The network stack between tasks (channels and their flow control).', defaultText: 'debloat on, target 1s' }),
    checkpointing: checkpointingSchema.optional().meta({
      description:
        'Periodic barrier checkpoints, as in Flink. Without it the job takes no checkpoints, a restart starts from the beginning, and the preflight refuses an exactly-once sink.',
      defaultText: 'none: off',
    }),
    stateBackend: z
      .enum(['heap', 'disk'])
      .default('heap')
      .describe(
        "Where keyed state and timers live (Flink's state backends). `heap`: JavaScript values in each worker's V8 heap (fastest; state must fit in memory). `disk`: an embedded lmdb store per keyed subtask in a local working folder under `stateDir` (Flink's EmbeddedRocksDBStateBackend), so state is bounded by the disk, not the heap; memory per subtask is a write buffer of 8192 entries plus the OS page cache. Both take asynchronous snapshots in one canonical format: a job moves between them through any checkpoint or savepoint.",
      ),
    stateDir: z.string().min(1).optional().meta({
      defaultText: 'the OS temp folder (`os.tmpdir()`) + `/weir-state`',
      description:
        "With `stateBackend: disk`: the folder of the local working folders, `<stateDir>/<job>/<operator uid>/<subtask>`, each emptied when its task starts (state comes back from the checkpoint, never from here) and deleted when it ends. Put it on a local disk with room for the job's state (not a RAM-backed tmpfs); a folder that cannot be written fails the job naming this setting.",
    }),
    cluster: z
      .object({
        id: z
          .string()
          .regex(/^[A-Za-z0-9._-]{1,100}$/, 'a cluster id is 1 to 100 of A-Z a-z 0-9 . _ -')
          .describe('The cluster: the consumer group its members form, and the prefix of the job’s own topics and transactional ids.'),
        instanceId: z
          .string()
          .min(1)
          .optional()
          .describe(
            'Static membership (group.instance.id), one per member: a member restarted under it within the session timeout gets its tasks back at once.',
          ),
        sessionTimeout: duration('cluster.sessionTimeout')
          .default(10_000)
          .describe('A member silent this long is out of the group, its tasks go to the others (the broker bounds it: group.min/max.session.timeout.ms).'),
        keyedTasks: positiveInt.optional().meta({
          description:
            "The tasks of each keyed stage (the partition count of the exchange topics a keyBy writes): each task holds a contiguous range of key groups, as a subtask of that parallelism does in one process, and the range's state moves with its partition. Fewer, larger tasks cost fewer transactions, exchange reads and checkpoints per record (Kafka Streams sizes its repartition topics so); more let more members share the stage. At most maxParallelism; fixed for the life of a cluster (a savepoint starts a new cluster id at another count).",
          defaultText:
            'a new cluster: the most partitions of a source stage (at most maxParallelism); a cluster that ran before: the count its keyed exchange topics hold',
        }),
        threads: positiveInt.default(availableParallelism()).meta({
          description:
            "The worker threads a member runs its tasks on (each with its own Kafka connections), tasks spread over them: one member per host uses the host's cores. The member's main thread keeps its group membership, the fencing of its tasks' earlier owners and the REST API.",
          defaultText: 'the number of cores (`os.availableParallelism()`)',
        }),
      })
      .strict()
      .optional()
      .meta({
        description: 'Cluster mode (docs/scale-out.md): the job runs as tasks shared by every process started with the same id (`weir run --cluster <id>`).',
        defaultText: 'none: one process',
      }),
    restartStrategy: restartStrategySchema
      .default({
        type: 'exponential-delay',
        initialBackoff: 1000,
        maxBackoff: 60_000,
        multiplier: 1.5,
        resetBackoffThreshold: 60 * 60 * 1000,
        jitter: 0.1,
        attemptsBeforeResetBackoff: 20,
      })
      .meta({
        description:
          "What a task failure does: the job restarts from its latest completed checkpoint after a wait, as long as the strategy allows, and fails when it no longer does. A failure no restart can cure never restarts: DATA_LOSS, DESERIALIZATION_FAILED (the 'fail' policy of a source) and OFFSET_OUT_OF_RANGE (onOffsetOutOfRange 'fail'). The default (Flink's since 1.19, bounded) rides out outages of many minutes and stops a crash loop after 20 restarts in a row (about 12 minutes of waits: 1 s, 1.5 s, 2.3 s, ... up to 1 min each).",
        defaultText: 'exponential-delay: initialBackoff 1s, multiplier 1.5, maxBackoff 1m, jitter 0.1, resetBackoffThreshold 1h, attemptsBeforeResetBackoff 20',
      }),
  })
  .strict()
  .superRefine((config, context) => {
    const keyedTasks = config.cluster?.keyedTasks;
    if (keyedTasks !== undefined && keyedTasks > config.maxParallelism) {
      context.addIssue({
        code: 'custom',
        path: ['cluster', 'keyedTasks'],
        message: `cluster.keyedTasks (${keyedTasks}) is above maxParallelism (${config.maxParallelism}): a task holds at least one key group; lower cluster.keyedTasks (--keyed-tasks)`,
      });
    }
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
