import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { WeirError } from '../core/errors/weir-error.ts';

const run = promisify(execFile);

/** The folder holding the broker's POM and logging configuration, shipped with the package. */
export const kafkaAssetsDir = fileURLToPath(new URL('../../kafka/', import.meta.url));
const pomPath = join(kafkaAssetsDir, 'pom.xml');

export interface KafkaDistribution {
  kafkaVersion: string;
  /** The runtime classpath, jars in Maven's own cache. */
  classpath: string;
}

/** The Kafka version the POM pins. */
export async function pinnedKafkaVersion(): Promise<string> {
  const pom = await readFile(pomPath, 'utf8');
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
  if (version === undefined) throw new WeirError('INTERNAL', `${pomPath} names no kafka.version`, { fault: 'internal' });
  return version;
}

/** Where the resolved classpath lists are kept: $XDG_CACHE_HOME/weir, else ~/.cache/weir. */
export function classpathCacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'weir');
}

/**
 * Resolves the broker's classpath with Maven (downloading into ~/.m2 on first use) and caches the
 * list, keyed by the POM's hash. A cached list whose jars have vanished is resolved again.
 */
export async function resolveKafkaDistribution(log: (line: string) => void = () => {}, cacheDir = classpathCacheDir()): Promise<KafkaDistribution> {
  const pom = await readFile(pomPath, 'utf8');
  const kafkaVersion = await pinnedKafkaVersion();
  const key = createHash('sha256').update(pom).digest('hex').slice(0, 16);
  const cacheFile = join(cacheDir, `classpath-${key}.txt`);
  if (existsSync(cacheFile)) {
    const classpath = (await readFile(cacheFile, 'utf8')).trim();
    if (classpath.split(':').every((jar) => existsSync(jar))) return { kafkaVersion, classpath };
  }
  await requireCommand('mvn', ['-v'], 'Maven (mvn)', 'install Maven 3.6+ (for example `apt-get install maven`)');
  log(`fetching Apache Kafka ${kafkaVersion} from Maven Central (first use only)...`);
  await mkdir(cacheDir, { recursive: true });
  try {
    await runMavenWithProgress(['-B', '-f', pomPath, 'dependency:build-classpath', '-DincludeScope=runtime', `-Dmdep.outputFile=${cacheFile}`], log);
  } catch (error) {
    const output = error as { output?: string };
    const tail = (output.output ?? String(error)).trim().split('\n').slice(-15).join('\n');
    throw new WeirError('KAFKA_FETCH_FAILED', `Maven could not fetch Apache Kafka ${kafkaVersion}:\n${tail}`, {
      hint: 'check that Maven Central is reachable (or a mirror in ~/.m2/settings.xml), or set KAFKA_BROKERS to use an existing cluster',
      fault: 'external',
      retriable: true,
    });
  }
  return { kafkaVersion, classpath: (await readFile(cacheFile, 'utf8')).trim() };
}

/**
 * Runs Maven, saying every 2 s how far its downloads are (files and megabytes so far, from its
 * "Downloaded from" lines), so a first fetch of some 50 MB is not silent. Rejects with Maven's
 * output when it fails.
 */
function runMavenWithProgress(args: string[], log: (line: string) => void): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('mvn', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let files = 0;
    let kilobytes = 0;
    let reported = 0;
    const report = setInterval(() => {
      if (files === reported) return;
      reported = files;
      log(`  ${files} files fetched (${(kilobytes / 1024).toFixed(1)} MB)...`);
    }, 2_000);
    const read = (chunk: Buffer) => {
      const text = chunk.toString();
      output = (output + text).slice(-20_000);
      for (const match of text.matchAll(/Downloaded from [^:]+: \S+ \(([\d.]+) ([kM]?B)/g)) {
        files++;
        const size = Number(match[1]);
        kilobytes += match[2] === 'MB' ? size * 1024 : match[2] === 'kB' ? size : size / 1024;
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('error', (error) => {
      clearInterval(report);
      reject(Object.assign(error, { output }));
    });
    child.once('exit', (code) => {
      clearInterval(report);
      if (files > 0) log(`  fetched ${files} files (${(kilobytes / 1024).toFixed(1)} MB)`);
      if (code === 0) resolvePromise();
      else reject(Object.assign(new Error(`mvn exited with code ${code}`), { output }));
    });
  });
}

/** Fails with a clear error when a command is not installed. */
export async function requireCommand(command: string, args: string[], what: string, install: string): Promise<void> {
  try {
    await run(command, args);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new WeirError('MISSING_TOOL', `${what} is not installed, and the local Kafka broker needs it`, {
        hint: `${install}, or set KAFKA_BROKERS to use an existing cluster`,
      });
    }
    throw error;
  }
}
