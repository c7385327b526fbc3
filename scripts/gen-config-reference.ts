/**
 * Generates docs/configuration.md from the option schemas, so the reference cannot drift from the
 * code: the job environment (zod schema in src/api/environment-config.ts), the flags of `weir run`
 * (its commander command), and the options of kafkaSource and kafkaSink (their zod schemas).
 *
 *   node scripts/gen-config-reference.ts           writes docs/configuration.md
 *   node scripts/gen-config-reference.ts --check   exits 1 when docs/configuration.md is stale
 *
 * Types, defaults and ranges come from the schemas; the texts from their `.describe()` / `.meta()`.
 * test/unit/docs/config-reference.test.ts fails when the file is not what this produces.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Option } from 'commander';
import { z } from 'zod';
import { runCommand } from '../src/cli/commands/run.ts';
import { KAFKA_SETTING_FLAGS, KAFKA_SETTINGS, kafkaSettingVariable } from '../src/connectors/kafka/kafka-settings.ts';
import { kafkaSinkOptionsSchema } from '../src/connectors/kafka/kafka-sink-options.ts';
import { kafkaSourceOptionsSchema } from '../src/connectors/kafka/kafka-source-options.ts';
import { environmentConfigSchema } from '../src/core/config/environment-config.ts';
import { formatDuration } from '../src/core/time/duration.ts';

export const CONFIGURATION_DOC = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));

type Schema = z.ZodType;

interface Meta {
  description?: string;
  typeText?: string;
  defaultText?: string;
}

/** A schema without its optional and default wrappers, with what they said. */
interface Unwrapped {
  core: Schema;
  required: boolean;
  hasDefault: boolean;
  defaultValue: unknown;
  meta: Meta;
}

const defOf = (schema: Schema) => schema._zod.def as unknown as Record<string, unknown> & { type: string };
const metaOf = (schema: Schema): Meta => (z.globalRegistry.get(schema) ?? {}) as Meta;

function unwrap(schema: Schema): Unwrapped {
  const result: Unwrapped = { core: schema, required: true, hasDefault: false, defaultValue: undefined, meta: {} };
  for (let layer: Schema | undefined = schema; layer !== undefined; ) {
    // The outermost text wins: it is the one written on the option itself.
    result.meta = { ...metaOf(layer), ...result.meta };
    result.core = layer;
    const def = defOf(layer);
    if (def.type === 'optional') result.required = false;
    else if (def.type === 'default' || def.type === 'prefault') {
      result.required = false;
      if (!result.hasDefault) {
        result.hasDefault = true;
        result.defaultValue = def.defaultValue;
      }
    } else break;
    layer = def.innerType as Schema;
  }
  return result;
}

/** A duration option: numbers or strings turned into milliseconds by a transform. */
function isDuration(schema: Schema): boolean {
  const def = defOf(schema);
  if (def.type !== 'pipe' || defOf(def.out as Schema).type !== 'transform') return false;
  const input = defOf(def.in as Schema);
  const options = (input.options as Schema[] | undefined)?.map((option) => defOf(option).type);
  return input.type === 'union' && options?.length === 2 && options.includes('number') && options.includes('string');
}

function quote(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : typeof value === 'bigint' ? `${value}n` : String(value);
}

/** The type as a TypeScript user reads it. */
function typeText(schema: Schema): string {
  const { core, meta } = unwrap(schema);
  if (meta.typeText !== undefined) return meta.typeText;
  if (isDuration(core)) return 'duration';
  const def = defOf(core);
  switch (def.type) {
    case 'number':
      return (core as z.ZodNumber).isInt ? 'integer' : 'number';
    case 'literal':
      return (def.values as unknown[]).map(quote).join(' | ');
    case 'enum':
      return Object.values(def.entries as Record<string, unknown>)
        .map(quote)
        .join(' | ');
    case 'array': {
      const element = typeText(def.element as Schema);
      return element.includes(' ') ? `(${element})[]` : `${element}[]`;
    }
    case 'union':
      if (isDiscriminated(core))
        return `{ type: ${variants(core)
          .map(([type]) => quote(type))
          .join(' | ')}, ... }`;
      return (def.options as Schema[]).map(typeText).join(' | ');
    case 'object': {
      const shape = (core as z.ZodObject).shape as Record<string, Schema>;
      return `{ ${Object.entries(shape)
        .map(([key, field]) => `${key}${unwrap(field).required ? '' : '?'}: ${typeText(field)}`)
        .join(', ')} }`;
    }
    case 'record':
      return `Record<${typeText(def.keyType as Schema)}, ${typeText(def.valueType as Schema)}>`;
    case 'pipe':
      return typeText(def.in as Schema);
    case 'custom':
      return 'object';
    default:
      return def.type;
  }
}

function isDiscriminated(schema: Schema): boolean {
  const def = defOf(schema);
  return def.type === 'union' && typeof def.discriminator === 'string';
}

/** The variants of a union discriminated by `type`: [type, object schema]. */
function variants(schema: Schema): [string, z.ZodObject][] {
  return (defOf(schema).options as z.ZodObject[]).map((option) => [String((defOf(option.shape.type as Schema).values as unknown[])[0]), option]);
}

/** The allowed values beyond the type: ranges, lengths, patterns, refinements. */
function allowedText(schema: Schema): string {
  const { core } = unwrap(schema);
  if (isDuration(core)) {
    const refinements = ((defOf(core).checks as { _zod: { def: { error?: () => unknown } } }[] | undefined) ?? [])
      .map((check) => check._zod.def.error?.())
      .filter((message): message is string => typeof message === 'string')
      .map((message) => message.replace(/^must be /, ''));
    return refinements.length > 0 ? refinements.join(', ') : '0 or more';
  }
  const type = defOf(core).type;
  if (!['number', 'string', 'array'].includes(type)) return '';
  const json = z.toJSONSchema(core, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const parts: string[] = [];
  const minimum = json.minimum as number | undefined;
  const maximum = json.maximum as number | undefined;
  const exclusiveMinimum = json.exclusiveMinimum as number | undefined;
  const bounded = maximum !== undefined && maximum < Number.MAX_SAFE_INTEGER;
  if (exclusiveMinimum !== undefined) parts.push(`above ${exclusiveMinimum}`);
  else if (minimum !== undefined && bounded) parts.push(`${minimum} to ${maximum}`);
  else if (minimum !== undefined) parts.push(`${minimum} or more`);
  else if (bounded) parts.push(`at most ${maximum}`);
  if (json.minLength === 1 || json.minItems === 1) parts.push('not empty');
  if (typeof json.pattern === 'string') parts.push(`\`/${json.pattern}/\``);
  return parts.join(', ');
}

/** A value as a job's code would write it. */
function valueText(value: unknown, duration: boolean): string {
  if (duration && typeof value === 'number') return `\`${formatDuration(value)}\``;
  const literal = (item: unknown): string =>
    item !== null && typeof item === 'object'
      ? `{ ${Object.entries(item)
          .map(([key, entry]) => `${key}: ${literal(entry)}`)
          .join(', ')} }`
      : quote(item);
  return `\`${literal(value)}\``;
}

function defaultText(schema: Schema): string {
  const { core, required, hasDefault, defaultValue, meta } = unwrap(schema);
  if (meta.defaultText !== undefined) return meta.defaultText;
  if (hasDefault) return valueText(defaultValue, isDuration(core));
  return required ? 'required' : 'none';
}

// --- `weir run` flags -------------------------------------------------------------------------

interface Flag {
  option: Option;
  /** The setting it sets, as a path of the environment schema. */
  setting: string | undefined;
  /** For restartStrategy flags: the strategy type they select. */
  variant: string | undefined;
}

/**
 * Which setting a flag of `weir run` sets: a flag named after a top-level setting, or one whose
 * description starts with the setting's path (`checkpointing.timeout`, `restartStrategy fixed-delay: ...`).
 */
function runFlags(): Flag[] {
  const shape = environmentConfigSchema.shape as Record<string, Schema>;
  const checkpointing = unwrap(shape.checkpointing as Schema).core as z.ZodObject;
  const cluster = unwrap(shape.cluster as Schema).core as z.ZodObject;
  const restart = unwrap(shape.restartStrategy as Schema).core;
  return runCommand().options.map((option): Flag => {
    const name = option.attributeName();
    if (!option.negate && name in shape) return { option, setting: name, variant: undefined };
    const path = /^checkpointing\.(\w+)/.exec(option.description);
    if (path !== null && (path[1] as string) in checkpointing.shape) return { option, setting: `checkpointing.${path[1]}`, variant: undefined };
    const clusterPath = /^cluster\.(\w+)/.exec(option.description);
    if (clusterPath !== null && (clusterPath[1] as string) in cluster.shape) return { option, setting: `cluster.${clusterPath[1]}`, variant: undefined };
    const strategy = /^restartStrategy ([\w-]+)/.exec(option.description);
    const variant = strategy === null ? undefined : variants(restart).find(([type]) => type === strategy[1]);
    if (variant !== undefined) {
      const field = name.replace(/^restart/, '').replace(/^./, (first) => first.toLowerCase());
      return { option, setting: field in variant[1].shape ? `restartStrategy.${field}` : 'restartStrategy', variant: variant[0] };
    }
    return { option, setting: undefined, variant: undefined };
  });
}

const flagCode = (flag: Flag) => `\`${flag.option.long}\``;

// --- Markdown ---------------------------------------------------------------------------------

/** A table as biome formats it: cells padded to the widest in their column. */
function table(header: string[], rows: string[][]): string {
  const escaped = [header, ...rows].map((row) => row.map((cell) => cell.replaceAll('|', '\\|')));
  const widths = header.map((_, column) => Math.max(3, ...escaped.map((row) => [...(row[column] as string)].length)));
  const line = (row: string[]) => `| ${row.map((cell, column) => cell + ' '.repeat((widths[column] as number) - [...cell].length)).join(' | ')} |`;
  const [head, ...body] = escaped as [string[], ...string[][]];
  return [line(head), `| ${widths.map((width) => '-'.repeat(width)).join(' | ')} |`, ...body.map(line)].join('\n');
}

function settingRows(shape: Record<string, Schema>, prefix: string, flags: Flag[], variant?: string): string[][] {
  const rows: string[][] = [];
  for (const [key, field] of Object.entries(shape)) {
    if (variant !== undefined && key === 'type') continue;
    const path = `${prefix}${key}`;
    const { core, meta } = unwrap(field);
    const flagsOf = flags.filter((flag) => flag.setting === path && flag.variant === variant).map(flagCode);
    const nested = defOf(core).type === 'object';
    // A nested object is shown as `object`, its settings in the rows after it.
    rows.push([
      `\`${path}\``,
      `\`${nested ? 'object' : typeText(field)}\``,
      defaultText(field),
      allowedText(field),
      flagsOf.join(', '),
      meta.description ?? '',
    ]);
    if (nested) rows.push(...settingRows((core as z.ZodObject).shape as Record<string, Schema>, `${path}.`, flags, variant));
  }
  return rows;
}

function optionRows(schema: z.ZodObject): string[][] {
  return Object.entries(schema.shape as Record<string, Schema>).map(([key, field]) => [
    `\`${key}\``,
    `\`${typeText(field)}\``,
    defaultText(field),
    allowedText(field),
    unwrap(field).meta.description ?? '',
  ]);
}

const SETTING_HEADER = ['setting', 'type', 'default', 'allowed', '`weir run` flag', 'description'];
const OPTION_HEADER = ['option', 'type', 'default', 'allowed', 'description'];

/** The whole of docs/configuration.md. */
export function generateConfigReference(): string {
  const flags = runFlags();
  const shape = environmentConfigSchema.shape as Record<string, Schema>;
  const restart = unwrap(shape.restartStrategy as Schema).core;
  const objectOf = (schema: Schema) => unwrap(schema).core as z.ZodObject;
  const sections: string[] = [
    '# Configuration reference',
    '<!-- Generated by scripts/gen-config-reference.ts from the option schemas. Do not edit: change the schemas and run `node scripts/gen-config-reference.ts`. -->',
    "Every setting of a job, the flags of `weir run`, and the options of the Kafka connectors, generated from the schemas that validate them. A job's settings go in `defineJob({ config })` ([writing-a-job.md](writing-a-job.md)); the connectors' options in `kafkaSource(...)` and `kafkaSink(...)` ([connectors.md](connectors.md)). Both are checked when the job is built: a bad value fails with one line naming the setting and a hint (`INVALID_CONFIG`, `INVALID_SOURCE`, `INVALID_SINK`, `INVALID_DURATION`, `INVALID_BOOTSTRAP`), and unknown settings are refused.",
    "A **duration** is a number of milliseconds or text with a unit: `500ms`, `10s`, `15m`, `1h` (`'1000'` is 1000 ms).",
    '## Job environment: `defineJob({ config })`',
    "`weir run` flags override the job's `config`; `checkpointing` and `cluster` merge setting by setting, so `--checkpoint-interval 5s` keeps the job's `checkpointing.storage`, and `--cluster <id>` a config file's `cluster.threads`.",
    table(SETTING_HEADER, settingRows(Object.fromEntries(Object.entries(shape).filter(([key]) => key !== 'restartStrategy')), '', flags)),
    '`maxParallelism` must be at least `parallelism` (and at least the `parallelism` of every operator).',
    '### `restartStrategy`',
    `${unwrap(shape.restartStrategy as Schema).meta.description ?? ''} Type \`${typeText(shape.restartStrategy as Schema)}\`, default ${defaultText(shape.restartStrategy as Schema)}. \`--restart-attempts\` and \`--restart-delay\` select \`fixed-delay\` (the other one at its default: 3 attempts, 1s).`,
  ];
  for (const [type, variant] of variants(restart)) {
    const variantFlags = flags.filter((flag) => flag.variant === type && flag.setting === 'restartStrategy').map(flagCode);
    sections.push(`#### \`{ type: '${type}' }\``);
    sections.push(`${metaOf(variant).description ?? ''}${variantFlags.length > 0 ? ` \`weir run\` flag: ${variantFlags.join(', ')}.` : ''}`);
    const rows = settingRows(variant.shape as Record<string, Schema>, 'restartStrategy.', flags, type);
    if (rows.length > 0) sections.push(table(SETTING_HEADER, rows));
  }
  sections.push(
    '## `weir run` flags',
    '`weir run [options] <job>` runs a job module. The flags that set a job setting are in the tables above; the others:',
    table(
      ['flag', 'default', 'description'],
      flags
        .filter((flag) => flag.setting === undefined)
        .map((flag) => [
          `\`${flag.option.flags}\``,
          flag.option.defaultValue === undefined ? '' : `\`${String(flag.option.defaultValue)}\``,
          flag.option.description,
        ]),
    ),
    '## Kafka source: `kafkaSource(options)`',
    table(OPTION_HEADER, optionRows(objectOf(kafkaSourceOptionsSchema))),
    '## Kafka sink: `kafkaSink(options)`',
    table(OPTION_HEADER, optionRows(objectOf(kafkaSinkOptionsSchema))),
    "A connector without `bootstrap` or `connection` takes the command's Kafka connection settings (below): `--brokers`, else `KAFKA_BROKERS` (`host:port[,host:port...]`), else the `--kafka-config` file, in every worker thread.",
    '## Kafka connection settings',
    "What `weir run`, `weir verify`, `weir doctor`, `weir demo` and `readTopic` connect with, and the default `bootstrap` and `connection` of every Kafka connector that does not set its own ([connectors.md](connectors.md#secured-clusters-tls-mutual-tls-sasl)). Each setting comes from the command-line option, else the environment variable, else the properties file of `--kafka-config <file>` (else of `WEIR_KAFKA_CONFIG`), written with Kafka's client property names. Secrets have no option: a command line is visible to every user of the machine.",
    table(
      ['property', 'environment variable', 'option', 'description'],
      Object.entries(KAFKA_SETTINGS).map(([key, description]) => {
        const flag = Object.values(KAFKA_SETTING_FLAGS).find(([setting]) => setting === key)?.[1];
        const variable = key === 'bootstrap.servers' ? '`KAFKA_BROKERS` (or `WEIR_KAFKA_BOOTSTRAP_SERVERS`)' : `\`${kafkaSettingVariable(key)}\``;
        return [`\`${key}\``, variable, flag === undefined ? '' : `\`${flag}\``, description];
      }),
    ),
  );
  return `${sections.join('\n\n')}\n`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const generated = generateConfigReference();
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(CONFIGURATION_DOC, 'utf8');
    } catch {}
    if (current !== generated) {
      console.error('docs/configuration.md is stale: run node scripts/gen-config-reference.ts');
      process.exitCode = 1;
    }
  } else {
    writeFileSync(CONFIGURATION_DOC, generated);
    console.log(`wrote ${CONFIGURATION_DOC}`);
  }
}
