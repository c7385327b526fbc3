import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { SchemaRegistryClient } from '../../connectors/schema-registry/schema-registry-client.ts';
import { SCHEMA_REGISTRY_VARIABLES, type SchemaRegistrySettings } from '../../connectors/schema-registry/schema-registry-settings.ts';
import { WeirError } from '../../core/errors/weir-error.ts';

/** How `weir produce` / `weir consume` read and write a key or a value: text as it is, or Avro, Protobuf or JSON Schema in the Schema Registry wire format. */
export const RECORD_FORMATS = ['string', 'avro', 'protobuf', 'json-schema'] as const;
export type RecordFormat = (typeof RECORD_FORMATS)[number];

/** Whether a format goes through the Schema Registry. */
export const isRegistryFormat = (format: RecordFormat): format is Exclude<RecordFormat, 'string'> => format !== 'string';

export interface RegistryCliOptions {
  keyFormat: RecordFormat;
  valueFormat: RecordFormat;
  registry?: string;
  registryUser?: string;
  registryCaLocation?: string;
}

const names = SCHEMA_REGISTRY_VARIABLES;

/** --key-format, --value-format and the registry's connection options (defaults from WEIR_SCHEMA_REGISTRY_*; the password has no option). */
export function addRegistryOptions(command: Command, formatHelp: string): Command {
  return command
    .addOption(new Option('--key-format <format>', `the keys: ${formatHelp}`).choices(RECORD_FORMATS).default('string'))
    .addOption(new Option('--value-format <format>', `the values: ${formatHelp}`).choices(RECORD_FORMATS).default('string'))
    .option('--registry <url>', `the Schema Registry (Confluent API root) for the avro, protobuf and json-schema formats (default ${names.url})`)
    .option(
      '--registry-user <name>',
      `the registry's basic-auth user (default ${names.user}); the password has no option (a command line is visible to every user): ${names.password}`,
    )
    .option('--registry-ca-location <file>', `PEM file of the CA that signed an https registry's certificate (default ${names.caLocation})`);
}

/** The registry client when a format needs one (undefined when key and value are both strings); options first, then the environment. */
export function registryOf(options: RegistryCliOptions, env: NodeJS.ProcessEnv = process.env): SchemaRegistryClient | undefined {
  if (!isRegistryFormat(options.keyFormat) && !isRegistryFormat(options.valueFormat)) return undefined;
  const flag = isRegistryFormat(options.valueFormat) ? `--value-format ${options.valueFormat}` : `--key-format ${options.keyFormat}`;
  const settings: SchemaRegistrySettings = {};
  if (options.registry !== undefined) settings.url = options.registry;
  else if ((env[names.url] ?? '').trim() === '')
    throw new WeirError('INVALID_CONFIG', `${flag} needs a Schema Registry, and none is given`, {
      hint: `pass --registry <url> (e.g. http://registry:8081) or set ${names.url}`,
    });
  if (options.registryUser !== undefined) {
    const password = env[names.password];
    if (password === undefined || password === '')
      throw new WeirError('INVALID_CONFIG', `--registry-user is given and ${names.password} is not set`, {
        hint: `set ${names.password} (there is no option for it: a command line is visible to every user of the machine)`,
      });
    settings.basicAuth = { username: options.registryUser, password };
  }
  if (options.registryCaLocation !== undefined) {
    try {
      settings.tls = { ca: readFileSync(options.registryCaLocation, 'utf8') };
    } catch (error) {
      throw new WeirError('INVALID_CONFIG', `--registry-ca-location ${options.registryCaLocation}: ${(error as Error).message}`, {
        hint: "give a readable PEM file of the CA that signed the registry's certificate",
      });
    }
  }
  return new SchemaRegistryClient(settings, env);
}
