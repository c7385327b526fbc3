import { readFileSync } from 'node:fs';
import { WeirError } from '../../core/errors/weir-error.ts';
import { parseDuration } from '../../core/time/duration.ts';
import { parseProperties } from '../kafka/kafka-properties.ts';

/** How to reach a Confluent-compatible Schema Registry (Confluent, Apicurio's ccompat API, Karapace). */
export interface SchemaRegistrySettings {
  /** The API root, e.g. http://registry:8081 or https://host/apis/ccompat/v7. No credentials in it: use basicAuth. Default WEIR_SCHEMA_REGISTRY_URL. */
  url?: string;
  /** HTTP basic authentication (Confluent's basic.auth.user.info). Never logged nor shown in errors. Default WEIR_SCHEMA_REGISTRY_USER and WEIR_SCHEMA_REGISTRY_PASSWORD. */
  basicAuth?: { username: string; password: string };
  /** TLS for an https url: the CA certificates (PEM) to trust (default: the PEM file WEIR_SCHEMA_REGISTRY_CA_LOCATION names), and whether to check the server's certificate (default true). */
  tls?: { ca?: string | Buffer; rejectUnauthorized?: boolean };
  /** How long one request waits for its answer. Default 10 s. */
  requestTimeout?: number | string;
  /** How long requests are retried, with back-off, while the registry is unreachable or answers 5xx. Default 5 s. */
  retryTimeout?: number | string;
}

/** The settings once checked: the url without a trailing slash, durations in ms, the Authorization header built (and kept out of messages). */
export interface ParsedSchemaRegistrySettings {
  url: string;
  authorization: string | undefined;
  ca: string | undefined;
  rejectUnauthorized: boolean;
  requestTimeoutMs: number;
  retryTimeoutMs: number;
}

const invalid = (message: string, hint: string) => new WeirError('INVALID_CONFIG', `schema registry settings: ${message}`, { hint });

/** The environment variables that give what settings leave out (as WEIR_KAFKA_* do for Kafka's): never a secret in code or on a command line. */
export const SCHEMA_REGISTRY_VARIABLES = {
  url: 'WEIR_SCHEMA_REGISTRY_URL',
  user: 'WEIR_SCHEMA_REGISTRY_USER',
  password: 'WEIR_SCHEMA_REGISTRY_PASSWORD',
  caLocation: 'WEIR_SCHEMA_REGISTRY_CA_LOCATION',
} as const;

const variable = (env: NodeJS.ProcessEnv, name: string): string | undefined => {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value;
};

/**
 * `settings` with what they leave out taken from the environment, each setting on its own (as
 * Kafka's settings are: options first, then WEIR_KAFKA_*): the url from WEIR_SCHEMA_REGISTRY_URL,
 * basicAuth from WEIR_SCHEMA_REGISTRY_USER and WEIR_SCHEMA_REGISTRY_PASSWORD (both or neither),
 * tls.ca from the PEM file WEIR_SCHEMA_REGISTRY_CA_LOCATION names. Messages name the variables,
 * never their values.
 */
export function schemaRegistrySettingsWithEnvironment(settings: SchemaRegistrySettings, env: NodeJS.ProcessEnv = process.env): SchemaRegistrySettings {
  if (settings === null || typeof settings !== 'object') return settings;
  const names = SCHEMA_REGISTRY_VARIABLES;
  const merged: SchemaRegistrySettings = { ...settings };
  if (merged.url === undefined) {
    const url = variable(env, names.url);
    if (url !== undefined) merged.url = url.trim();
  }
  if (merged.basicAuth === undefined) {
    const username = variable(env, names.user);
    const password = env[names.password];
    if (username !== undefined && (password === undefined || password === ''))
      throw invalid(
        `${names.user} is set and ${names.password} is not`,
        `set ${names.password} too (or unset ${names.user} for a registry without authentication)`,
      );
    if (username === undefined && password !== undefined && password !== '')
      throw invalid(`${names.password} is set and ${names.user} is not`, `set ${names.user} too`);
    if (username !== undefined) merged.basicAuth = { username: username.trim(), password: password as string };
  }
  const caLocation = variable(env, names.caLocation);
  if (merged.tls?.ca === undefined && caLocation !== undefined) {
    if (typeof merged.url === 'string' && !merged.url.trim().toLowerCase().startsWith('https:'))
      throw invalid(`${names.caLocation} is set but the url is not https`, `use an https:// url, or unset ${names.caLocation}`);
    let ca: string;
    try {
      ca = readFileSync(caLocation.trim(), 'utf8');
    } catch (error) {
      throw invalid(
        `cannot read ${names.caLocation} (${caLocation.trim()}): ${(error as Error).message}`,
        `point ${names.caLocation} at a readable PEM file of the CA that signed the registry's certificate`,
      );
    }
    merged.tls = { ...merged.tls, ca };
  }
  return withPropertiesFile(merged, env);
}

/**
 * What settings and variables still leave out, from the Kafka client properties file
 * (WEIR_KAFKA_CONFIG, which `--kafka-config` sets), under the names Confluent's clients read there:
 * `schema.registry.url`, `basic.auth.user.info` (`user:password`, with
 * `basic.auth.credentials.source` USER_INFO or unset) and `schema.registry.ssl.ca.location` (for
 * an https url).
 * Messages name the file and the key, never a value.
 */
function withPropertiesFile(settings: SchemaRegistrySettings, env: NodeJS.ProcessEnv): SchemaRegistrySettings {
  const file = variable(env, 'WEIR_KAFKA_CONFIG')?.trim();
  if (file === undefined || (settings.url !== undefined && settings.basicAuth !== undefined && settings.tls?.ca !== undefined)) return settings;
  let properties: Map<string, { value: string }>;
  try {
    properties = parseProperties(readFileSync(file, 'utf8'), file);
  } catch {
    return settings; // the Kafka settings report an unreadable file, naming it
  }
  const get = (key: string) => {
    const value = properties.get(key)?.value.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const merged: SchemaRegistrySettings = { ...settings };
  const url = get('schema.registry.url');
  if (merged.url === undefined && url !== undefined) merged.url = url;
  const userInfo = get('basic.auth.user.info');
  if (merged.basicAuth === undefined && userInfo !== undefined) {
    const source = get('basic.auth.credentials.source');
    if (source !== undefined && source.toUpperCase() !== 'USER_INFO')
      throw invalid(
        `${file}: basic.auth.credentials.source is ${source}; Weir reads USER_INFO only`,
        'set basic.auth.credentials.source=USER_INFO (or leave it out) with basic.auth.user.info=<user>:<password>',
      );
    const colon = userInfo.indexOf(':');
    if (colon <= 0) throw invalid(`${file}: basic.auth.user.info is not <user>:<password>`, 'write basic.auth.user.info=<user>:<password>');
    merged.basicAuth = { username: userInfo.slice(0, colon), password: userInfo.slice(colon + 1) };
  }
  const caLocation = get('schema.registry.ssl.ca.location');
  // Only for an https registry: one properties file may serve a plain http registry and a TLS broker.
  if (merged.tls?.ca === undefined && caLocation !== undefined && merged.url?.trim().toLowerCase().startsWith('https:') === true) {
    try {
      merged.tls = { ...merged.tls, ca: readFileSync(caLocation, 'utf8') };
    } catch (error) {
      throw invalid(
        `cannot read ${file}: schema.registry.ssl.ca.location (${caLocation}): ${(error as Error).message}`,
        "point it at a readable PEM file of the CA that signed the registry's certificate",
      );
    }
  }
  return merged;
}

export function parseSchemaRegistrySettings(settings: SchemaRegistrySettings): ParsedSchemaRegistrySettings {
  if (settings === null || typeof settings !== 'object')
    throw invalid('missing', 'pass registry: { url: "http://host:8081" } (or a schemaRegistry(...) client)');
  if (typeof settings.url !== 'string' || settings.url === '')
    throw invalid('url is required', `pass registry: { url: "http://host:8081" }, or set ${SCHEMA_REGISTRY_VARIABLES.url}`);
  let url: URL;
  try {
    url = new URL(settings.url);
  } catch {
    throw invalid(`url is not a URL`, 'give the API root, for example http://registry:8081');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid(`url must be http or https, not ${url.protocol}`, 'give the API root, for example http://registry:8081');
  if (url.username !== '' || url.password !== '')
    throw invalid('url holds credentials', 'take them out of the url and pass basicAuth: { username, password } (kept out of logs and errors)');
  const auth = settings.basicAuth;
  if (auth !== undefined && (typeof auth?.username !== 'string' || typeof auth?.password !== 'string' || auth.username === ''))
    throw invalid('basicAuth needs a username and a password (strings)', 'pass basicAuth: { username, password }');
  if (settings.tls !== undefined && url.protocol !== 'https:') throw invalid('tls is set but the url is not https', 'use an https:// url, or leave tls out');
  const ca = settings.tls?.ca;
  if (ca !== undefined && typeof ca !== 'string' && !Buffer.isBuffer(ca))
    throw invalid('tls.ca must be PEM text or a Buffer', 'pass tls: { ca: readFileSync("ca.pem") }');
  return {
    url: url.href.replace(/\/+$/, ''),
    authorization: auth === undefined ? undefined : `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`,
    ca: ca === undefined ? undefined : ca.toString(),
    rejectUnauthorized: settings.tls?.rejectUnauthorized !== false,
    requestTimeoutMs: parseDuration(settings.requestTimeout ?? 10_000, 'schema registry requestTimeout'),
    retryTimeoutMs: parseDuration(settings.retryTimeout ?? 5_000, 'schema registry retryTimeout'),
  };
}
