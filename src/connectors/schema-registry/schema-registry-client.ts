import { WeirError } from '../../core/errors/weir-error.ts';
import { type RegistryHttpAnswer, type RegistryHttpRequest, registryHttpCall } from './registry-http.ts';
import {
  type ParsedSchemaRegistrySettings,
  parseSchemaRegistrySettings,
  type SchemaRegistrySettings,
  schemaRegistrySettingsWithEnvironment,
} from './schema-registry-settings.ts';
import { registryHttpCallSync, sleepSync } from './sync-registry-http.ts';

/** A schema as the registry holds it under an id. */
export interface RegisteredSchema {
  id: number;
  schemaType: 'AVRO' | 'JSON' | 'PROTOBUF';
  /** The schema text (Avro: its JSON; Protobuf: the .proto; JSON Schema: its JSON). */
  schema: string;
  /** The other subjects' schemas it uses (Protobuf imports, JSON Schema $refs), when it has any. */
  references?: SchemaReference[];
}

/** A schema's use of another subject's schema: `name` is how the schema refers to it (a Protobuf import path, a JSON Schema $ref). */
export interface SchemaReference {
  name: string;
  subject: string;
  version: number;
}

/** A referenced schema, fetched: its name in the referring schema, its text and type. */
export interface ResolvedReference {
  name: string;
  schemaType: RegisteredSchema['schemaType'];
  schema: string;
}

/** What the registry says of a schema against a subject's latest version under the subject's compatibility rule. */
export interface CompatibilityAnswer {
  compatible: boolean;
  /** Why not, as the registry words it (asked with ?verbose=true). */
  messages: string[];
}

/** How long an id the registry does not know is remembered as unknown: bad records of one id then cost no request each. */
const UNKNOWN_ID_TTL_MS = 10_000;

/**
 * A Confluent-compatible Schema Registry's REST API, with the schemas it gave cached by id for
 * the life of the process (an id's schema never changes). Every call has an asynchronous form
 * (preflight, batch preparation) and a synchronous one (a cache miss inside a synchronous batch
 * loop). Requests are retried with back-off while the registry is unreachable or answers 5xx,
 * for retryTimeout. Its messages name the url, never the credentials.
 */
export class SchemaRegistryClient {
  readonly url: string;
  readonly #settings: ParsedSchemaRegistrySettings;
  readonly #schemas = new Map<number, RegisteredSchema>();
  readonly #unknown = new Map<number, number>();
  readonly #versions = new Map<string, RegisteredSchema>();

  /** What `settings` leave out (url, basicAuth, tls.ca) comes from `env`'s WEIR_SCHEMA_REGISTRY_* variables (schema-registry-settings.ts). */
  constructor(settings: SchemaRegistrySettings = {}, env: NodeJS.ProcessEnv = process.env) {
    this.#settings = parseSchemaRegistrySettings(schemaRegistrySettingsWithEnvironment(settings, env));
    this.url = this.#settings.url;
  }

  /** The cached schema of `id`, or undefined: no request, for the hot path. */
  cached(id: number): RegisteredSchema | undefined {
    return this.#schemas.get(id);
  }

  /** Whether `id` was answered 404 lately (then it is not asked again for a while). */
  knownUnknown(id: number): boolean {
    const until = this.#unknown.get(id);
    if (until === undefined) return false;
    if (Date.now() < until) return true;
    this.#unknown.delete(id);
    return false;
  }

  async schemaById(id: number): Promise<RegisteredSchema | undefined> {
    const cached = this.#schemas.get(id);
    if (cached !== undefined || this.knownUnknown(id)) return cached;
    return this.#schemaAnswer(id, await this.#send('GET', `/schemas/ids/${id}`));
  }

  schemaByIdSync(id: number): RegisteredSchema | undefined {
    const cached = this.#schemas.get(id);
    if (cached !== undefined || this.knownUnknown(id)) return cached;
    return this.#schemaAnswer(id, this.#sendSync('GET', `/schemas/ids/${id}`));
  }

  /** The id (and version) of `schema` under `subject`, or undefined when the subject does not hold it. */
  async lookup(
    subject: string,
    schema: string,
    schemaType: RegisteredSchema['schemaType'],
    references?: readonly SchemaReference[],
  ): Promise<{ id: number; version: number } | undefined> {
    return this.#lookupAnswer(
      subject,
      schemaType,
      schema,
      await this.#send('POST', `/subjects/${encodeURIComponent(subject)}`, schemaBody(schema, schemaType, references)),
      references,
    );
  }

  lookupSync(
    subject: string,
    schema: string,
    schemaType: RegisteredSchema['schemaType'],
    references?: readonly SchemaReference[],
  ): { id: number; version: number } | undefined {
    return this.#lookupAnswer(
      subject,
      schemaType,
      schema,
      this.#sendSync('POST', `/subjects/${encodeURIComponent(subject)}`, schemaBody(schema, schemaType, references)),
      references,
    );
  }

  /** Registers `schema` under `subject` (the registry checks the subject's compatibility rule): its id. */
  async register(subject: string, schema: string, schemaType: RegisteredSchema['schemaType'], references?: readonly SchemaReference[]): Promise<number> {
    return this.#registerAnswer(
      subject,
      schemaType,
      schema,
      await this.#send('POST', `/subjects/${encodeURIComponent(subject)}/versions`, schemaBody(schema, schemaType, references)),
      references,
    );
  }

  registerSync(subject: string, schema: string, schemaType: RegisteredSchema['schemaType'], references?: readonly SchemaReference[]): number {
    return this.#registerAnswer(
      subject,
      schemaType,
      schema,
      this.#sendSync('POST', `/subjects/${encodeURIComponent(subject)}/versions`, schemaBody(schema, schemaType, references)),
      references,
    );
  }

  /**
   * The schemas `schema` references, fetched (each subject version once for the process), those
   * they reference in turn first: what a parser needs before the schema itself. Throws, naming the
   * reference, when the registry does not hold one.
   */
  async references(schema: RegisteredSchema): Promise<ResolvedReference[]> {
    const resolved: ResolvedReference[] = [];
    const visit = async (references: readonly SchemaReference[] | undefined, seen: Set<string>): Promise<void> => {
      for (const reference of references ?? []) {
        if (seen.has(reference.name)) continue;
        seen.add(reference.name);
        const path = versionPath(reference);
        const held = this.#versions.get(path) ?? this.#versionAnswer(reference, schema, await this.#send('GET', path));
        await visit(held.references, seen);
        resolved.push({ name: reference.name, schemaType: held.schemaType, schema: held.schema });
      }
    };
    await visit(schema.references, new Set());
    return resolved;
  }

  referencesSync(schema: RegisteredSchema): ResolvedReference[] {
    const resolved: ResolvedReference[] = [];
    const visit = (references: readonly SchemaReference[] | undefined, seen: Set<string>): void => {
      for (const reference of references ?? []) {
        if (seen.has(reference.name)) continue;
        seen.add(reference.name);
        const path = versionPath(reference);
        const held = this.#versions.get(path) ?? this.#versionAnswer(reference, schema, this.#sendSync('GET', path));
        visit(held.references, seen);
        resolved.push({ name: reference.name, schemaType: held.schemaType, schema: held.schema });
      }
    };
    visit(schema.references, new Set());
    return resolved;
  }

  /** Whether every reference of `schema` (and theirs) is cached: then referencesSync makes no request. */
  referencesCached(schema: RegisteredSchema): boolean {
    return (schema.references ?? []).every((reference) => {
      const held = this.#versions.get(versionPath(reference));
      return held !== undefined && this.referencesCached(held);
    });
  }

  /** Whether `subject`'s rule accepts `schema` after its latest version; undefined when the subject has no version yet (anything goes). */
  async compatibility(
    subject: string,
    schema: string,
    schemaType: RegisteredSchema['schemaType'],
    references?: readonly SchemaReference[],
  ): Promise<CompatibilityAnswer | undefined> {
    const path = `/compatibility/subjects/${encodeURIComponent(subject)}/versions/latest?verbose=true`;
    const answer = await this.#send('POST', path, schemaBody(schema, schemaType, references));
    if (answer.status === 404) return undefined;
    const body = this.#json<{ is_compatible?: boolean; messages?: string[]; reason?: string | null }>('POST', path, answer);
    const messages = [...(body.messages ?? []), ...(typeof body.reason === 'string' ? [body.reason] : [])];
    return { compatible: body.is_compatible === true, messages };
  }

  /** The compatibility rule of `subject`: its own, else the registry's default. */
  async compatibilityLevel(subject: string): Promise<string> {
    const own = await this.#send('GET', `/config/${encodeURIComponent(subject)}`);
    const answer = own.status === 404 ? await this.#send('GET', '/config') : own;
    const body = this.#json<{ compatibilityLevel?: string; compatibility?: string }>('GET', `/config/${subject}`, answer);
    return body.compatibilityLevel ?? body.compatibility ?? 'unknown';
  }

  /** Throws unless the registry answers (the global config: a small, always-present resource). */
  async ping(): Promise<void> {
    this.#json('GET', '/config', await this.#send('GET', '/config'));
  }

  toString(): string {
    return `schema registry ${this.url}`;
  }

  toJSON(): { url: string } {
    return { url: this.url }; // never the credentials
  }

  #schemaAnswer(id: number, answer: RegistryHttpAnswer): RegisteredSchema | undefined {
    if (answer.status === 404) {
      this.#unknown.set(id, Date.now() + UNKNOWN_ID_TTL_MS);
      return undefined;
    }
    const body = this.#json<{ schema?: string; schemaType?: string; references?: SchemaReference[] }>('GET', `/schemas/ids/${id}`, answer);
    if (typeof body.schema !== 'string') throw this.#failure('GET', `/schemas/ids/${id}`, 'the answer holds no schema');
    const schema: RegisteredSchema = { id, schemaType: (body.schemaType ?? 'AVRO') as RegisteredSchema['schemaType'], schema: body.schema };
    if (Array.isArray(body.references) && body.references.length > 0) schema.references = body.references;
    this.#schemas.set(id, schema);
    return schema;
  }

  #versionAnswer(reference: SchemaReference, from: RegisteredSchema, answer: RegistryHttpAnswer): RegisteredSchema {
    const path = versionPath(reference);
    if (answer.status === 404)
      throw new WeirError(
        'TASK_FAILED',
        `${this}: schema id ${from.id} references "${reference.name}" (subject "${reference.subject}" version ${reference.version}), which the registry does not hold`,
        { hint: `register "${reference.name}" under subject "${reference.subject}" (or fix the reference of schema id ${from.id})`, fault: 'external' },
      );
    const body = this.#json<{ id?: number; schema?: string; schemaType?: string; references?: SchemaReference[] }>('GET', path, answer);
    if (typeof body.schema !== 'string') throw this.#failure('GET', path, 'the answer holds no schema');
    const held: RegisteredSchema = { id: body.id ?? -1, schemaType: (body.schemaType ?? 'AVRO') as RegisteredSchema['schemaType'], schema: body.schema };
    if (Array.isArray(body.references) && body.references.length > 0) held.references = body.references;
    this.#versions.set(path, held);
    return held;
  }

  #lookupAnswer(
    subject: string,
    schemaType: RegisteredSchema['schemaType'],
    schema: string,
    answer: RegistryHttpAnswer,
    references?: readonly SchemaReference[],
  ): { id: number; version: number } | undefined {
    if (answer.status === 404) return undefined; // 40401 no such subject, 40403 the subject does not hold the schema
    const body = this.#json<{ id: number; version: number }>('POST', `/subjects/${subject}`, answer);
    this.#schemas.set(body.id, held(body.id, schemaType, schema, references));
    return { id: body.id, version: body.version };
  }

  #registerAnswer(
    subject: string,
    schemaType: RegisteredSchema['schemaType'],
    schema: string,
    answer: RegistryHttpAnswer,
    references?: readonly SchemaReference[],
  ): number {
    if (answer.status === 409) {
      // Apicurio answers error_code 0 here, Confluent 409: the status is what counts.
      const message = parse<{ message?: string }>(answer.text)?.message ?? answer.text;
      throw new WeirError('INVALID_SINK', `${this}: subject "${subject}" refuses the schema (incompatible under its compatibility rule): ${message}`, {
        hint: "make the schema compatible with the subject's latest version (add defaults, do not change types), or change the subject's rule",
      });
    }
    const body = this.#json<{ id: number }>('POST', `/subjects/${subject}/versions`, answer);
    this.#schemas.set(body.id, held(body.id, schemaType, schema, references));
    return body.id;
  }

  #json<T>(method: string, path: string, answer: RegistryHttpAnswer): T {
    if (answer.status === 0) throw this.#failure(method, path, `unreachable: ${answer.error}`, true);
    if (answer.status === 401 || answer.status === 403)
      throw this.#failure(
        method,
        path,
        `answered ${answer.status} (not authorized)`,
        false,
        "check basicAuth (username and password) and the user's rights on the registry",
      );
    if (answer.status < 200 || answer.status >= 300)
      throw this.#failure(method, path, `answered ${answer.status}: ${answer.text.slice(0, 300)}`, answer.status >= 500);
    const body = parse<T>(answer.text);
    if (body === undefined) throw this.#failure(method, path, `answered ${answer.status} with no JSON: ${answer.text.slice(0, 100)}`);
    return body;
  }

  #failure(method: string, path: string, what: string, retriable = false, hint = 'check the schema registry url and that the registry runs'): WeirError {
    return new WeirError('TASK_FAILED', `${this}: ${method} ${path.replace(/\?.*$/, '')} ${what}`, { hint, fault: 'external', retriable });
  }

  #request(method: RegistryHttpRequest['method'], path: string, body?: unknown): RegistryHttpRequest {
    const settings = this.#settings;
    const request: RegistryHttpRequest = { method, url: `${settings.url}${path}`, timeoutMs: settings.requestTimeoutMs };
    if (body !== undefined) request.body = JSON.stringify(body);
    if (settings.authorization !== undefined) request.authorization = settings.authorization;
    if (settings.ca !== undefined) request.ca = settings.ca;
    if (!settings.rejectUnauthorized) request.rejectUnauthorized = false;
    return request;
  }

  async #send(method: RegistryHttpRequest['method'], path: string, body?: unknown): Promise<RegistryHttpAnswer> {
    const request = this.#request(method, path, body);
    const deadline = Date.now() + this.#settings.retryTimeoutMs;
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      const answer = await registryHttpCall(request);
      if (!retriable(answer) || Date.now() + delay > deadline) return answer;
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  #sendSync(method: RegistryHttpRequest['method'], path: string, body?: unknown): RegistryHttpAnswer {
    const request = this.#request(method, path, body);
    const deadline = Date.now() + this.#settings.retryTimeoutMs;
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      const answer = registryHttpCallSync(request);
      if (!retriable(answer) || Date.now() + delay > deadline) return answer;
      sleepSync(delay);
    }
  }
}

/**
 * A client for `settings` (share one between the serializers and deserializers of a job: they then
 * share its cache). What they leave out comes from the environment: `schemaRegistry()` reaches the
 * registry WEIR_SCHEMA_REGISTRY_URL names, with WEIR_SCHEMA_REGISTRY_USER / _PASSWORD and
 * WEIR_SCHEMA_REGISTRY_CA_LOCATION when set.
 */
export function schemaRegistry(settings: SchemaRegistrySettings = {}): SchemaRegistryClient {
  return new SchemaRegistryClient(settings);
}

/** A client as given, or one made from settings. */
export function registryClient(registry: SchemaRegistryClient | SchemaRegistrySettings): SchemaRegistryClient {
  return registry instanceof SchemaRegistryClient ? registry : new SchemaRegistryClient(registry);
}

const retriable = (answer: RegistryHttpAnswer) => answer.status === 0 || answer.status >= 500;

const schemaBody = (schema: string, schemaType: RegisteredSchema['schemaType'], references?: readonly SchemaReference[]) => ({
  schema,
  ...(schemaType === 'AVRO' ? {} : { schemaType }),
  ...(references === undefined || references.length === 0 ? {} : { references }),
});

const held = (id: number, schemaType: RegisteredSchema['schemaType'], schema: string, references?: readonly SchemaReference[]): RegisteredSchema =>
  references === undefined || references.length === 0 ? { id, schemaType, schema } : { id, schemaType, schema, references: [...references] };

const versionPath = (reference: SchemaReference) => `/subjects/${encodeURIComponent(reference.subject)}/versions/${reference.version}`;

function parse<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
