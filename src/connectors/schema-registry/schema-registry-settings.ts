import { WeirError } from '../../core/errors/weir-error.ts';
import { parseDuration } from '../../core/time/duration.ts';

/** How to reach a Confluent-compatible Schema Registry (Confluent, Apicurio's ccompat API, Karapace). */
export interface SchemaRegistrySettings {
  /** The API root, e.g. http://registry:8081 or https://host/apis/ccompat/v7. No credentials in it: use basicAuth. */
  url: string;
  /** HTTP basic authentication (Confluent's basic.auth.user.info). Never logged nor shown in errors. */
  basicAuth?: { username: string; password: string };
  /** TLS for an https url: the CA certificates (PEM) to trust, and whether to check the server's certificate (default true). */
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

export function parseSchemaRegistrySettings(settings: SchemaRegistrySettings): ParsedSchemaRegistrySettings {
  if (settings === null || typeof settings !== 'object')
    throw invalid('missing', 'pass registry: { url: "http://host:8081" } (or a schemaRegistry(...) client)');
  if (typeof settings.url !== 'string' || settings.url === '') throw invalid('url is required', 'pass registry: { url: "http://host:8081" }');
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
