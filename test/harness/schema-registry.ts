/**
 * A real Confluent-compatible Schema Registry for the tests: Apicurio Registry's Quarkus application
 * (io.apicurio:apicurio-registry-app from Maven Central, the version test/harness/apicurio/pom.xml
 * pins), built once by quarkus-maven-plugin into .weir/apicurio/build/ and started by the test that
 * needs it on a free loopback port, stopped after it. Its storage is in-memory (H2), so every start
 * is a fresh, empty registry; it serves Confluent's REST API under /apis/ccompat/v7, which is what
 * Confluent's clients (@confluentinc/schemaregistry, @kafkajs/confluent-schema-registry) speak.
 * Never a stub: schemas are parsed, given ids and checked against compatibility rules by the server.
 *
 *   node test/harness/schema-registry.ts --fetch   builds the registry (CI does this at install time)
 *
 * Needs Maven and Java 17+ on PATH (as the Kafka broker does).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from '../../src/local-kafka/ports.ts';

const run = promisify(execFile);
const pomPath = join(import.meta.dirname, 'apicurio', 'pom.xml');
/** The pom's <build><directory>: the repository's .weir/apicurio/build (gitignored). */
const buildDir = join(import.meta.dirname, '..', '..', '.weir', 'apicurio', 'build');
const runnerJar = join(buildDir, 'weir-apicurio-registry-1-runner.jar');
const stampFile = join(buildDir, 'pom.sha256');

/** The command that builds the registry, for messages. */
export const SCHEMA_REGISTRY_FETCH_COMMAND = 'bash scripts/node-env.sh node test/harness/schema-registry.ts --fetch';

/**
 * Builds the registry's runnable jar unless the one built from this POM is there: Maven resolves
 * the app and its dependencies (into ~/.m2, about 150 MB on first use) and Quarkus augments it.
 */
export async function ensureSchemaRegistryBuilt(log: (line: string) => void = () => {}): Promise<string> {
  const pomHash = createHash('sha256')
    .update(await readFile(pomPath))
    .digest('hex');
  if (existsSync(runnerJar) && existsSync(stampFile) && (await readFile(stampFile, 'utf8')).trim() === pomHash) return runnerJar;
  log('building Apicurio Registry from Maven Central (first use only)...');
  try {
    await run('mvn', ['-B', '-q', '-f', pomPath, 'package'], { maxBuffer: 64 * 1024 * 1024 });
  } catch (error) {
    const failure = error as { code?: string; stdout?: string; stderr?: string };
    if (failure.code === 'ENOENT')
      throw new Error('Maven (mvn) is not installed: the Schema Registry tests build Apicurio Registry with it (apt-get install maven)');
    const tail = `${failure.stdout ?? ''}${failure.stderr ?? ''}`.trim().split('\n').slice(-20).join('\n');
    throw new Error(`Maven could not build Apicurio Registry from ${pomPath} (run \`${SCHEMA_REGISTRY_FETCH_COMMAND}\` to retry):\n${tail}`);
  }
  if (!existsSync(runnerJar)) throw new Error(`Maven built no ${runnerJar}: the POM's Quarkus packaging changed?`);
  await writeFile(stampFile, `${pomHash}\n`);
  return runnerJar;
}

export interface SchemaRegistryServer {
  /** Confluent's API root: http://127.0.0.1:<port>/apis/ccompat/v7 (a client's baseURL / host). */
  url: string;
  /** The process id, for tests that stop or pause it. */
  pid: number;
  /** GET/POST/PUT/DELETE against `url` with Confluent's content type; the body is parsed JSON. */
  request<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

/** PEM files for a registry that serves https only (Quarkus' quarkus.http.ssl.certificate.*): its certificate and key, and the CA that signed it (for the readiness check and `request`). */
export interface SchemaRegistryTls {
  certFile: string;
  keyFile: string;
  caFile: string;
}

/** Starts the registry and waits until its Confluent API answers; fails (never skips) when it cannot. With `tls`, it serves https only. */
export async function startSchemaRegistry(options: { startTimeoutMs?: number; tls?: SchemaRegistryTls } = {}): Promise<SchemaRegistryServer> {
  const jar = await ensureSchemaRegistryBuilt();
  const port = await freePort();
  const tls = options.tls;
  const sslPort = tls === undefined ? undefined : await freePort();
  const url = tls === undefined ? `http://127.0.0.1:${port}/apis/ccompat/v7` : `https://127.0.0.1:${sslPort}/apis/ccompat/v7`;
  const ca = tls === undefined ? undefined : await readFile(tls.caFile, 'utf8');
  const tlsArgs =
    tls === undefined
      ? []
      : [
          `-Dquarkus.http.ssl-port=${sslPort}`,
          `-Dquarkus.http.ssl.certificate.files=${tls.certFile}`,
          `-Dquarkus.http.ssl.certificate.key-files=${tls.keyFile}`,
          '-Dquarkus.http.insecure-requests=disabled',
        ];
  const child = spawn(
    'java',
    [
      '-Xmx256m',
      '-XX:TieredStopAtLevel=1',
      `-Dquarkus.http.port=${port}`,
      ...tlsArgs,
      '-Dquarkus.http.host=127.0.0.1',
      '-Dquarkus.log.level=WARN',
      '-Dquarkus.log.category."io.apicurio".level=WARN',
      '-jar',
      jar,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-6000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const deadline = Date.now() + (options.startTimeoutMs ?? 90_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Apicurio Registry exited with ${child.exitCode} before it answered:\n${output}`);
    const failed = await Promise.race([spawnError, sleep(0).then(() => undefined)]);
    if (failed !== undefined) throw new Error(`could not start java for Apicurio Registry: ${failed.message} (install a JRE 17+)`);
    const status = await send(url, ca, 'GET', '/subjects').then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) break;
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`Apicurio Registry did not answer on ${url} within ${(options.startTimeoutMs ?? 90_000) / 1000} s (last status ${status}):\n${output}`);
    }
    await sleep(250);
  }
  return {
    url,
    pid: child.pid as number,
    async request<T>(method: string, path: string, body?: unknown) {
      const response = await send(url, ca, method, path, body);
      return { status: response.status, body: (response.text === '' ? undefined : JSON.parse(response.text)) as T };
    },
    stop: () => stopChild(child),
  };
}

/** One request to the registry's API (over https trusting `ca` when given). */
function send(url: string, ca: string | undefined, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const target = new URL(`${url}${path}`);
    const call = (target.protocol === 'https:' ? https : http).request(
      target,
      { method, headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, ...(ca === undefined ? {} : { ca }) },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    call.on('error', reject);
    call.end(text);
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(10_000, undefined, { ref: false }).then(() => child.kill('SIGKILL'))]);
}

if (process.argv[2] === '--fetch') {
  const jar = await ensureSchemaRegistryBuilt((line) => console.log(line));
  console.log(`Apicurio Registry: ${jar}`);
}
