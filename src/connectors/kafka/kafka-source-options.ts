import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import { WeirError } from '../../core/errors/weir-error.ts';
import { parseDuration } from '../../core/time/duration.ts';
import { parseBootstrap } from './bootstrap.ts';
import type { KafkaSourceOptions } from './kafka-source.ts';
import type { TopicRecord } from './partition-fetcher.ts';

/**
 * The Kafka source's options as a zod schema: validated once when `kafkaSource(...)` is called,
 * and the source of the options table in docs/configuration.md (scripts/gen-config-reference.ts).
 *
 * Every option carries metadata: `description` (the docs), `hint` (the fix an error names),
 * and where the schema cannot say it, `typeText` and `defaultText` (the docs' type and default).
 * The helpers below are shared with the sink's options (kafka-sink-options.ts).
 */
export interface OptionMeta {
  description: string;
  /** What to do when the option is wrong: the hint of the error. */
  hint?: string;
  /** The type as the docs show it, where the schema's own (a function, a class) says too little. */
  typeText?: string;
  /** The default as the docs show it, where it is not a value of the schema (KAFKA_BROKERS, a derived name). */
  defaultText?: string;
}

/** A problem a check found, with its own error code and hint (an issue's `params`). */
interface ProblemParams {
  code?: string;
  hint?: string;
}

/** A duration option: milliseconds, or text such as `500ms`, `10s`, `15m`; `setting` names it in the error. */
export function durationOption(setting: string) {
  return z.union([z.number(), z.string()], { error: 'must be a duration: milliseconds or text such as 500ms, 10s, 15m or 1h' }).transform((value, context) => {
    try {
      return parseDuration(value, setting);
    } catch (error) {
      const weir = error as WeirError;
      context.addIssue({ code: 'custom', message: weir.message, input: value, params: { code: weir.code, hint: weir.hint } satisfies ProblemParams });
      return z.NEVER;
    }
  });
}

/** The `bootstrap` option: a `host:port` list, checked now so a typo fails when the job is built. */
export function bootstrapOption(connector: string) {
  return z
    .union([z.string(), z.array(z.string())], { error: 'must be "host:port[,host:port...]" or an array of "host:port"' })
    .superRefine((value, context) => {
      try {
        parseBootstrap(value, `${connector} bootstrap`);
      } catch (error) {
        const weir = error as WeirError;
        context.addIssue({ code: 'custom', message: weir.message, input: value, params: { code: weir.code, hint: weir.hint } satisfies ProblemParams });
      }
    })
    .optional()
    .meta({
      description: 'The brokers: `host:port[,host:port...]`, or an array of `host:port`.',
      hint: 'give host:port[,host:port...], for example 127.0.0.1:9092',
      defaultText: 'KAFKA_BROKERS',
    } satisfies OptionMeta);
}

/** The `connection` option: passed unchanged to every connection (@platformatic/kafka's ConnectionOptions). */
export function connectionOption() {
  return z
    .custom<ConnectionOptions>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), { error: 'must be an object' })
    .optional()
    .meta({
      description: 'TLS (`tls`) and SASL (`sasl`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, ...) options, passed unchanged to every connection.',
      hint: "pass @platformatic/kafka's connection options, for example { tls: {...} } or { sasl: { mechanism: 'PLAIN', username, password } }",
      typeText: 'ConnectionOptions',
    } satisfies OptionMeta);
}

/** A function option; `signature` is how the docs and the errors show it. */
export function functionOption<F>(signature: string) {
  return z.custom<F>((value) => typeof value === 'function', {
    error: (issue) =>
      issue.input === undefined ? `is required: a function ${signature}` : `must be a function ${signature}, not ${describeValue(issue.input)}`,
  });
}

const offsetsFallback = z.enum(['earliest', 'latest'], { error: "must be 'earliest' or 'latest'" });
// Whole numbers are checked by a refinement, not .int(): inside a union, a failed refinement is
// reported for the form the value has, where a failed type check only says no form matched.
const wholeNumber = () => z.number().min(0).refine(Number.isInteger, 'must be a whole number');

export const startingOffsetsSchema = z.union(
  [
    z.literal('earliest'),
    z.literal('latest'),
    z.strictObject({ timestamp: wholeNumber() }),
    z.strictObject({
      offsets: z.record(z.string(), z.union([wholeNumber(), z.bigint().min(0n)])).superRefine((offsets, context) => {
        for (const key of Object.keys(offsets)) {
          if (!/^.+:\d+$/.test(key)) context.addIssue({ code: 'custom', message: `the key ${JSON.stringify(key)} is not "topic:partition"` });
        }
      }),
      fallback: offsetsFallback.optional(),
    }),
    z.strictObject({ committed: z.strictObject({ fallback: offsetsFallback }) }),
  ],
  {
    error:
      "must be 'earliest', 'latest', { timestamp: <ms since the epoch> }, { offsets: { 'topic:partition': offset }, fallback? } or { committed: { fallback: 'earliest' | 'latest' } }",
  },
);

export const kafkaSourceOptionsSchema = z
  .strictObject({
    bootstrap: bootstrapOption('kafkaSource'),
    topics: z
      .union([z.array(z.string().min(1)).min(1, { error: 'kafkaSource needs at least one topic' }), z.instanceof(RegExp)], {
        error: 'must be an array of topic names or a RegExp',
      })
      .meta({
        description: 'Topic names (at least one), or a `RegExp`: every matching topic is read, and so are matching topics created later (unless `bounded`).',
        hint: 'pass topics: ["name", ...] or a pattern such as /^orders-/',
        typeText: 'string[] | RegExp',
      } satisfies OptionMeta),
    startingOffsets: startingOffsetsSchema.default('earliest').meta({
      description:
        'Where each partition starts when the job starts without a checkpoint or savepoint (a restore always uses the checkpointed offsets): ' +
        "the earliest or latest offset, the first record at or after a timestamp, explicit offsets by `'topic:partition'` (other partitions start at the fallback, default earliest), " +
        "or the `groupId`'s committed offsets (partitions without one start at the fallback).",
      hint: "use 'earliest', 'latest', { timestamp }, { offsets, fallback } or { committed: { fallback } } (the last needs a groupId)",
    } satisfies OptionMeta),
    bounded: z
      .boolean()
      .default(false)
      .meta({
        description:
          'Stop at the last stable offsets the partitions have when the job first starts; the job then takes a final checkpoint and finishes. For tests and benchmarks.',
        hint: 'pass true or false',
      } satisfies OptionMeta),
    isolation: z
      .enum(['read_committed', 'read_uncommitted'])
      .default('read_committed')
      .meta({
        description:
          'Which records are read: `read_uncommitted` also sees records of aborted and still open transactions (the preflight warns about it in an exactly-once job).',
        hint: "leave isolation at its default, 'read_committed'",
      } satisfies OptionMeta),
    deserializer: functionOption<(record: TopicRecord) => unknown>('(record) => T').meta({
      description:
        "Turns a Kafka record (`topic`, `partition`, `offset`, `timestamp`, `key`, `value`, `headers`) into the job's record. Ready-made: `kafkaDeserializers.string`, `.json`, `.bytes`.",
      hint: 'pass deserializer: kafkaDeserializers.json (or .string, .bytes, or your own (record) => T)',
      typeText: '(record: TopicRecord) => T',
    } satisfies OptionMeta),
    groupId: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          "A consumer group: offsets are committed to it when a checkpoint completes, for monitoring (lag) only; a restore uses the checkpoint's offsets. Needed by `startingOffsets: { committed }`.",
        hint: 'give a consumer group name, or leave groupId out',
      } satisfies OptionMeta),
    connection: connectionOption(),
    maxWaitMs: z
      .number()
      .int()
      .min(0)
      .default(100)
      .meta({
        description: 'How long a fetch waits on the broker for data, in milliseconds.',
        hint: 'give a whole number of milliseconds, 0 or more',
      } satisfies OptionMeta),
    maxBytesPerPartition: z
      .number()
      .int()
      .min(1)
      .default(1024 * 1024)
      .meta({ description: 'The most bytes one fetch takes of one partition.', hint: 'give a whole number of bytes, 1 or more' } satisfies OptionMeta),
    partitionDiscoveryInterval: durationOption('kafkaSource partitionDiscoveryInterval')
      .default(30_000)
      .meta({
        description:
          'How often to look for new partitions and, with a pattern, new topics; a new partition is read from its earliest offset by the subtask a stable hash of its name picks. `0` turns discovery off; a bounded source never discovers.',
        hint: 'give milliseconds or a number with a unit, for example 500ms, 10s, 15m or 1h; 0 turns discovery off',
      } satisfies OptionMeta),
  })
  .superRefine((options, context) => {
    if (typeof options.startingOffsets === 'object' && 'committed' in options.startingOffsets && options.groupId === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['startingOffsets'],
        message: 'kafkaSource startingOffsets { committed } needs a groupId',
        params: { hint: 'pass groupId to kafkaSource, or start from earliest or latest' } satisfies ProblemParams,
      });
    }
  });

/** The source's options once validated: defaults applied, durations in milliseconds. */
export type ParsedKafkaSourceOptions<T> = Omit<z.output<typeof kafkaSourceOptionsSchema>, 'deserializer'> & { deserializer: (record: TopicRecord) => T };

/** Validates kafkaSource's options: one clear error (INVALID_SOURCE, or the code of a bad duration or bootstrap) naming each bad setting and its fix. */
export function parseKafkaSourceOptions<T>(options: KafkaSourceOptions<T>): ParsedKafkaSourceOptions<T> {
  return parseConnectorOptions(kafkaSourceOptionsSchema, options, 'kafkaSource', 'INVALID_SOURCE') as ParsedKafkaSourceOptions<T>;
}

// The TypeScript interface users see (with its docs) and the schema must agree; typecheck fails when they drift.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type KafkaSourceOptionsMatchSchema = Same<KafkaSourceOptions<unknown>, z.input<typeof kafkaSourceOptionsSchema>> extends true ? true : never;
const sourceOptionsMatch: KafkaSourceOptionsMatchSchema = true;
void sourceOptionsMatch;

/**
 * Parses a connector's options with its schema and turns every problem into one line:
 * `<connector> <option>: <problem>` (or the check's own full sentence), with the option's hint.
 */
export function parseConnectorOptions<S extends z.ZodType>(schema: S, input: unknown, connector: string, code: string): z.output<S> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new WeirError(code, `${connector} needs an options object, not ${describeValue(input)}`, {
      hint: `call ${connector}({ ... }) with its options; docs/configuration.md lists them`,
    });
  }
  const result = schema.safeParse(input, { error: issueMessage, reportInput: true });
  if (result.success) return result.data;
  const shape = shapeOf(schema);
  const problems = result.error.issues.map((issue) => {
    const params = (issue.code === 'custom' ? issue.params : undefined) as ProblemParams | undefined;
    const option = issue.path[0];
    const meta = (typeof option === 'string' ? z.globalRegistry.get(shape[option] as z.ZodType) : undefined) as OptionMeta | undefined;
    if (issue.code === 'unrecognized_keys' && issue.path.length > 0) {
      return {
        code,
        message: `${connector} ${pathText(issue.path)}: unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${key}"`).join(', ')}`,
        hint: meta?.hint ?? 'docs/configuration.md lists every option',
      };
    }
    if (issue.code === 'unrecognized_keys') {
      return {
        code,
        message: `${connector} has no option${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `"${key}"`).join(', ')}`,
        hint: `the options are ${Object.keys(shape).join(', ')}`,
      };
    }
    const message = issue.message.startsWith(`${connector} `) ? issue.message : `${connector} ${pathText(issue.path)}: ${issue.message}`;
    return { code: params?.code ?? code, message, hint: params?.hint ?? meta?.hint ?? 'docs/configuration.md lists every option' };
  });
  const [first] = problems as [(typeof problems)[number]];
  throw new WeirError(first.code, problems.map((problem) => problem.message).join('; '), {
    hint: [...new Set(problems.map((problem) => problem.hint))].join('; '),
  });
}

function shapeOf(schema: z.ZodType): Record<string, z.ZodType> {
  let inner: z.ZodType = schema;
  while (!(inner instanceof z.ZodObject)) {
    const def = inner._zod.def as { innerType?: z.ZodType; in?: z.ZodType };
    const next = def.innerType ?? def.in;
    if (next === undefined) return {};
    inner = next;
  }
  return inner.shape as Record<string, z.ZodType>;
}

function pathText(path: readonly PropertyKey[]): string {
  return path.map((part, index) => (typeof part === 'number' ? `[${part}]` : `${index === 0 ? '' : '.'}${String(part)}`)).join('');
}

/** Messages for zod's own issues (the schemas' own messages take precedence). */
function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  const input = issue.input;
  switch (issue.code) {
    case 'invalid_type':
      if (input === undefined) return 'is required';
      return `must be ${issue.expected === 'int' ? 'a whole number' : withArticle(issue.expected)}, not ${describeValue(input)}`;
    case 'too_small': {
      const minimum = String(issue.minimum);
      if (issue.origin === 'string') return issue.minimum === 1 ? 'must not be empty' : `must have at least ${minimum} characters`;
      if (issue.origin === 'array') return `needs at least ${minimum} ${issue.minimum === 1 ? 'entry' : 'entries'}`;
      return `must be ${issue.inclusive ? 'at least' : 'above'} ${minimum}, not ${describeValue(input)}`;
    }
    case 'too_big':
      return `must be ${issue.inclusive ? 'at most' : 'below'} ${String(issue.maximum)}, not ${describeValue(input)}`;
    case 'invalid_value': {
      const values = issue.values.map((value) => (typeof value === 'string' ? `'${value}'` : String(value)));
      const choices = values.length > 1 ? `${values.slice(0, -1).join(', ')} or ${values.at(-1)}` : String(values[0]);
      return input === undefined ? `is required: ${choices}` : `must be ${choices}, not ${describeValue(input)}`;
    }
    case 'invalid_format':
      return issue.format === 'regex' && 'pattern' in issue ? `${describeValue(input)} does not match ${String(issue.pattern)}` : undefined;
    default:
      return undefined;
  }
}

function withArticle(noun: string): string {
  return /^[aeiou]/.test(noun) ? `an ${noun}` : `a ${noun}`;
}

/** A value as an error shows it: strings quoted, objects by kind. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof RegExp) return String(value);
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
      return String(value);
    case 'bigint':
      return `${value}n`;
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default:
      return 'an object';
  }
}
