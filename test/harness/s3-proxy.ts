/**
 * A real S3-compatible server for the tests: S3Proxy (org.gaul:s3proxy from Maven Central, the
 * version test/harness/s3proxy/pom.xml pins) with its filesystem-nio2 backend in a fresh folder,
 * on a free loopback port, started by the test that needs it and stopped after it. Never a mock:
 * requests go over HTTP through @aws-sdk/client-s3, signed, with S3's conditional writes.
 *
 *   node test/harness/s3-proxy.ts --fetch   resolves the classpath (CI does this at install time)
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { classpathCacheDir } from '../../src/local-kafka/kafka-classpath.ts';
import { freePort } from '../../src/local-kafka/ports.ts';

const run = promisify(execFile);
const pomPath = join(import.meta.dirname, 's3proxy', 'pom.xml');

export const S3_TEST_IDENTITY = 'weir-test';
export const S3_TEST_CREDENTIAL = 'weir-test-secret';

/** The S3Proxy jars (Maven's cache), resolved once per POM and kept in Weir's cache folder. */
export async function resolveS3ProxyClasspath(): Promise<string> {
  const pom = await readFile(pomPath, 'utf8');
  const cacheFile = join(classpathCacheDir(), `s3proxy-classpath-${createHash('sha256').update(pom).digest('hex').slice(0, 16)}.txt`);
  if (existsSync(cacheFile)) {
    const classpath = (await readFile(cacheFile, 'utf8')).trim();
    if (classpath.split(':').every((jar) => existsSync(jar))) return classpath;
  }
  await mkdir(classpathCacheDir(), { recursive: true });
  await run('mvn', ['-B', '-q', '-f', pomPath, 'dependency:build-classpath', '-DincludeScope=runtime', `-Dmdep.outputFile=${cacheFile}`], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return (await readFile(cacheFile, 'utf8')).trim();
}

export interface S3TestServer {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  /** The environment a process needs to use it (AWS_ENDPOINT_URL, credentials, region; a shorter S3 socket timeout). */
  env: Record<string, string>;
  /** Creates a bucket, through the S3 API. */
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** Starts S3Proxy and waits until it answers; fails (never skips) when it cannot. */
export async function startS3Proxy(): Promise<S3TestServer> {
  const classpath = await resolveS3ProxyClasspath();
  const folder = await mkdtemp(join(tmpdir(), 'weir-s3proxy-'));
  const data = join(folder, 'data');
  await mkdir(data);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const properties = join(folder, 's3proxy.conf');
  await writeFile(
    properties,
    [
      `s3proxy.endpoint=${endpoint}`,
      's3proxy.authorization=aws-v2-or-v4',
      `s3proxy.identity=${S3_TEST_IDENTITY}`,
      `s3proxy.credential=${S3_TEST_CREDENTIAL}`,
      'jclouds.provider=filesystem-nio2',
      `jclouds.filesystem.basedir=${data}`,
      '',
    ].join('\n'),
  );
  const child = spawn('java', ['-DLOG_LEVEL=warn', '-Xmx256m', '-cp', classpath, 'org.gaul.s3proxy.Main', '--properties', properties], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`S3Proxy exited with ${child.exitCode} before it answered:\n${output}`);
    const answered = await fetch(endpoint).then(
      () => true,
      () => false,
    );
    if (answered) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`S3Proxy did not answer on ${endpoint} within 60 s:\n${output}`);
    }
    await sleep(200);
  }
  return {
    endpoint,
    env: {
      AWS_ENDPOINT_URL: endpoint,
      AWS_ACCESS_KEY_ID: S3_TEST_IDENTITY,
      AWS_SECRET_ACCESS_KEY: S3_TEST_CREDENTIAL,
      AWS_REGION: 'us-east-1',
      // A request S3Proxy leaves unanswered under load (a CI run saw a task's state upload stall for
      // 45 s during a cluster stop) fails after 10 s of silence and the SDK sends it again, instead of
      // after Weir's 30 s default per attempt, which three attempts make longer than a test's stop.
      WEIR_S3_SOCKET_TIMEOUT_MS: '10000',
    },
    async createBucket(name) {
      const client = new S3Client({
        endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: S3_TEST_IDENTITY, secretAccessKey: S3_TEST_CREDENTIAL },
      });
      try {
        await client.send(new CreateBucketCommand({ Bucket: name }));
      } finally {
        client.destroy();
      }
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(5000).then(() => child.kill('SIGKILL'))]);
      }
      await rm(folder, { recursive: true, force: true });
    },
  };
}

if (process.argv[2] === '--fetch') {
  const classpath = await resolveS3ProxyClasspath();
  console.log(`S3Proxy: ${classpath.split(':').length} jars`);
}
