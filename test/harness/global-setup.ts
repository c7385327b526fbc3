/**
 * The integration tests' global setup (node --test --test-global-setup): makes sure a real Kafka
 * broker is there for each transaction.version the tests cover, and exports where they are:
 *
 *   KAFKA_BROKERS      the default broker (as given, else the transaction.version 2 one)
 *   KAFKA_BROKERS_TV1  a broker whose cluster runs transaction.version 1 (classic)
 *   KAFKA_BROKERS_TV2  a broker whose cluster runs transaction.version 2 (KIP-890)
 *
 * Each comes from the environment when set there; KAFKA_BROKERS also serves the version it runs.
 * Whatever is missing is started here as a local broker on free ports in a fresh data folder and
 * stopped in the teardown. A broker that is given but cannot be reached fails the whole run: an
 * integration test never skips for want of Kafka. Debian's chromium, for the dashboard's browser
 * test, is installed when missing (scripts/install-chromium.sh).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describeCluster } from '../../src/connectors/kafka/cluster-info.ts';
import { parseBootstrap } from '../../src/connectors/kafka/kafka-connection-options.ts';
import { bootstrapOf, startLocalBroker, stopLocalBroker } from '../../src/local-kafka/local-broker.ts';
import { freePort } from '../../src/local-kafka/ports.ts';

const started: string[] = [];
const root = join(import.meta.dirname, '..', '..', '.weir', 'test-kafka');

export async function globalSetup(): Promise<void> {
  // The dashboard's browser test drives Debian's chromium; install it on a fresh machine.
  if (process.env.WEIR_CHROMIUM === undefined && !existsSync('/usr/bin/chromium')) {
    execFileSync('bash', [join(import.meta.dirname, '..', '..', 'scripts', 'install-chromium.sh')], { stdio: 'inherit' });
  }
  const given = process.env.KAFKA_BROKERS;
  const givenVersion = given === undefined ? undefined : (await describeCluster(parseBootstrap(given, 'KAFKA_BROKERS'))).transactionVersion;
  const wanted: Array<1 | 2> = [2, 1];
  await Promise.all(
    wanted.map(async (version) => {
      const name = `KAFKA_BROKERS_TV${version}`;
      const fromEnv = process.env[name];
      if (fromEnv !== undefined) {
        const info = await describeCluster(parseBootstrap(fromEnv, name));
        if (info.transactionVersion !== version) {
          throw new Error(`${name}=${fromEnv} runs transaction.version=${info.transactionVersion}, not ${version}`);
        }
        return;
      }
      if (given !== undefined && givenVersion === version) {
        process.env[name] = given;
        return;
      }
      const dataDir = join(root, `tv${version}-${process.pid}`);
      started.push(dataDir);
      const state = await startLocalBroker({
        dataDir,
        port: await freePort(),
        transactionVersion: version,
        wipe: true,
        log: (line) => process.stderr.write(`[test kafka tv${version}] ${line}\n`),
      });
      process.env[name] = bootstrapOf(state);
    }),
  );
  process.env.KAFKA_BROKERS = given ?? process.env.KAFKA_BROKERS_TV2;
}

export async function globalTeardown(): Promise<void> {
  await Promise.all(
    started.map(async (dataDir) => {
      await stopLocalBroker({ dataDir });
      await rm(dataDir, { recursive: true, force: true });
    }),
  );
}
