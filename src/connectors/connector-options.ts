import { z } from 'zod';
import type { ErrorCode } from '../core/errors/error-code.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { parseDuration } from '../core/time/duration.ts';

/**
 * What every connector's options schema shares: the metadata each option carries, option kinds
 * (durations, functions), and the parse that turns zod's issues into one clear WeirError.
 *
 * A connector's options are a zod schema, validated once when the connector is created, and the
 * source of its table in docs/configuration.md (scripts/gen-config-reference.ts). The TypeScript
 * interface users see (with its docs) is written by hand next to the schema; the two must agree,
 * which {@link Same} lets the typecheck enforce:
 *
 *     export type FooOptionsMatchSchema = Same<FooOptions, z.input<typeof fooOptionsSchema>> extends true ? true : never;
 *     const fooOptionsMatch: FooOptionsMatchSchema = true;
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
export interface ProblemParams {
  code?: ErrorCode;
  hint?: string;
}

/** True when A and B are the same type: the "interface and schema must agree" check. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Reports a WeirError a check threw as an issue that keeps its code and hint. */
export function addWeirIssue(context: Pick<z.core.$RefinementCtx, 'addIssue'>, input: unknown, error: unknown): void {
  const weir = error as WeirError;
  context.addIssue({ code: 'custom', message: weir.message, input, params: { code: weir.code, hint: weir.hint } satisfies ProblemParams });
}

/** A duration option: milliseconds, or text such as `500ms`, `10s`, `15m`; `setting` names it in the error. */
export function durationOption(setting: string) {
  return z.union([z.number(), z.string()], { error: 'must be a duration: milliseconds or text such as 500ms, 10s, 15m or 1h' }).transform((value, context) => {
    try {
      return parseDuration(value, setting);
    } catch (error) {
      addWeirIssue(context, value, error);
      return z.NEVER;
    }
  });
}

/** A function option; `signature` is how the docs and the errors show it. */
export function functionOption<F>(signature: string) {
  return z.custom<F>((value) => typeof value === 'function', {
    error: (issue) =>
      issue.input === undefined ? `is required: a function ${signature}` : `must be a function ${signature}, not ${describeValue(issue.input)}`,
  });
}

/**
 * Parses a connector's options with its schema and turns every problem into one line:
 * `<connector> <option>: <problem>` (or the check's own full sentence), with the option's hint.
 */
export function parseConnectorOptions<S extends z.ZodType>(schema: S, input: unknown, connector: string, code: ErrorCode): z.output<S> {
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
