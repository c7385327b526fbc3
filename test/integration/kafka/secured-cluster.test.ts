/**
 * Secured clusters, end to end: a broker started here with four listeners besides its PLAINTEXT
 * one (which the test uses to set up and to audit), certificates made with Java's keytool:
 *
 *   SSL        server TLS
 *   MTLS       TLS with ssl.client.auth=required (mutual TLS)
 *   SASL_SSL   SCRAM-SHA-256 and SCRAM-SHA-512 users over TLS (created at format time)
 *
 * A `weir run` exactly-once job reads and writes over SASL_SSL/SCRAM-SHA-512 (settings from a
 * properties file, the user from an option, the password from the environment), and its output is
 * read back read_committed, exact; `weir verify` and `weir doctor` work over mutual TLS (PEM files,
 * and a PKCS#12 keystore); readTopic reads over SCRAM-SHA-256; a wrong password and an untrusted CA
 * are one clear error each; and the password is in no output, no /api answer and no checkpoint file.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ClusterConnections } from '../../../src/connectors/kafka/cluster-connections.ts';
import { loadKafkaSettings } from '../../../src/connectors/kafka/kafka-settings.ts';
import { readTopic } from '../../../src/connectors/kafka/topic-reader.ts';
import { WeirError } from '../../../src/core/errors/weir-error.ts';
import { startLocalBroker, stopLocalBroker } from '../../../src/local-kafka/local-broker.ts';
import { freePorts } from '../../../src/local-kafka/ports.ts';
import { repositoryRoot, weir } from '../../harness/cli.ts';
import { createTestTopic } from '../../harness/kafka.ts';
import { auditCounts, exactCountAudit, writeChaosInput } from '../../harness/kafka-count-audit.ts';
import { makeTestCertificates, type TestCertificates } from '../../harness/test-certificates.ts';
import { startWeirRun, until } from '../../harness/weir-run.ts';

const PASSWORD_256 = 'scram-256-Secret-xyzzy';
const PASSWORD_512 = 'scram-512-Secret-plugh';
const RECORDS = 3000;

/** Every file under a folder, as text (checkpoint metadata, state files). */
async function allFileText(folder: string): Promise<string> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const texts = await Promise.all(entries.filter((entry) => entry.isFile()).map((entry) => readFile(join(entry.parentPath, entry.name), 'latin1')));
  return texts.join('\n');
}

describe('secured clusters: TLS, mutual TLS and SASL SCRAM against a real broker', () => {
  let folder: string;
  let certs: TestCertificates;
  const ports = { plaintext: 0, controller: 0, ssl: 0, mtls: 0, saslSsl: 0 };
  const plaintext = () => [{ host: '127.0.0.1', port: ports.plaintext }];
  let output = '';

  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'weir-secured-'));
    certs = await makeTestCertificates(folder);
    const names = Object.keys(ports) as (keyof typeof ports)[];
    const chosen = await freePorts(names.length);
    names.forEach((name, i) => {
      ports[name] = chosen[i] as number;
    });
    const listeners = `PLAINTEXT://127.0.0.1:${ports.plaintext},CONTROLLER://127.0.0.1:${ports.controller},SSL://127.0.0.1:${ports.ssl},MTLS://127.0.0.1:${ports.mtls},SASL_SSL://127.0.0.1:${ports.saslSsl}`;
    const scramModule = 'org.apache.kafka.common.security.scram.ScramLoginModule required;';
    await startLocalBroker({
      dataDir: join(folder, 'kafka'),
      port: ports.plaintext,
      controllerPort: ports.controller,
      wipe: true,
      formatArgs: [
        '--add-scram',
        `SCRAM-SHA-256=[name=weir256,password=${PASSWORD_256}]`,
        '--add-scram',
        `SCRAM-SHA-512=[name=weir512,password=${PASSWORD_512}]`,
      ],
      overrides: {
        listeners,
        'advertised.listeners': listeners,
        'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL',
        'ssl.keystore.type': 'PKCS12',
        'ssl.keystore.location': certs.brokerKeystore,
        'ssl.keystore.password': certs.storePassword,
        'ssl.key.password': certs.storePassword,
        'ssl.truststore.type': 'PKCS12',
        'ssl.truststore.location': certs.brokerTruststore,
        'ssl.truststore.password': certs.storePassword,
        'listener.name.mtls.ssl.client.auth': 'required',
        'sasl.enabled.mechanisms': 'SCRAM-SHA-256,SCRAM-SHA-512',
        'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config': scramModule,
        'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': scramModule,
      },
    });
  });
  after(async () => {
    await stopLocalBroker({ dataDir: join(folder, 'kafka') });
    await rm(folder, { recursive: true, force: true });
  });

  test('weir run: an exactly-once job over SASL_SSL with SCRAM-SHA-512; the output is exact, and the password is nowhere', async () => {
    const input = await createTestTopic(plaintext(), 'secured-in', 2);
    const out = await createTestTopic(plaintext(), 'secured-out', 2);
    output = out.topic;
    await writeChaosInput(plaintext(), input.topic, 2, RECORDS);
    const config = join(folder, 'scram-512.properties');
    await writeFile(
      config,
      `# a Kafka client config, as for kafka-console-consumer\nbootstrap.servers=127.0.0.1:${ports.saslSsl}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nssl.ca.location=${certs.caPem}\nclient.id=ignored-by-weir\n`,
    );
    const storage = join(folder, 'checkpoints');
    const job = startWeirRun(
      [
        join(repositoryRoot, 'test', 'fixtures', 'jobs', 'kafka-count-job.ts'),
        '--kafka-config',
        config,
        '--sasl-username',
        'weir512',
        '--parallelism',
        '2',
        '--workers',
        '2',
        '--checkpoint-interval',
        '200ms',
        '--log-level',
        'debug',
        '--checkpoint-storage',
        storage,
        '--ui-port',
        '0',
      ],
      // KAFKA_BROKERS (the shared test broker) would win over the file's bootstrap.servers: clear it.
      // 4 ms a record: the run lasts seconds once its tasks run, so the API still answers below.
      { KAFKA_BROKERS: '', WEIR_KAFKA_SASL_PASSWORD: PASSWORD_512, KC_INPUT: input.topic, KC_OUTPUT: out.topic, KC_WORK_US: '4000' },
    );
    const url = await job.url();
    // Read the API while the job runs (its tasks at work for seconds more), not after a checkpoint
    // line that a loaded machine may print only near the job's end.
    await until('the job running', async () =>
      (JSON.parse(await (await fetch(`${url}/api/job`)).text()) as { state?: string }).state === 'running' ? true : undefined,
    );
    const answers = await Promise.all(['/api/job', '/api/checkpoints', '/metrics', '/'].map(async (path) => (await fetch(`${url}${path}`)).text()));
    assert.equal(await job.exited, 0, job.stderr());
    assert.match(
      job.stderr(),
      /kafka: 127\.0\.0\.1:\d+ over SASL_SSL, SASL SCRAM-SHA-512 as "weir512", a given CA, no client certificate, from ssl\.ca\.location/,
    );
    assert.match(job.stderr(), /kafka config: not read by Weir \(ignored\): client\.id/);
    assert.match(job.stdout(), /^job "kafka-count" finished in/m);
    assert.deepEqual(await auditCounts(plaintext(), out.topic, RECORDS), exactCountAudit(RECORDS));

    const checkpointFiles = await allFileText(storage);
    assert.ok(checkpointFiles.length > 0, 'the job wrote checkpoints');
    for (const [where, text] of [
      ['stdout', job.stdout()],
      ['stderr', job.stderr()],
      ['the REST API and metrics', answers.join('\n')],
      ['the checkpoint folder', checkpointFiles],
    ] as const) {
      assert.ok(!text.includes(PASSWORD_512), `the password is in ${where}`);
    }
  });

  test('weir verify and weir doctor over mutual TLS: PEM files from options, a PKCS#12 keystore from a file', async () => {
    assert.ok(output !== '', 'runs after the job test');
    const verify = await weir(
      [
        'verify',
        '--topic',
        output,
        '--field',
        'seq',
        '--expect',
        String(RECORDS),
        '--brokers',
        `127.0.0.1:${ports.mtls}`,
        '--ssl-ca-location',
        certs.caPem,
        '--ssl-certificate-location',
        certs.clientCertPem,
        '--ssl-key-location',
        certs.clientKeyPem,
      ],
      { KAFKA_BROKERS: '' },
    );
    assert.equal(verify.code, 0, verify.stderr);
    assert.match(verify.stderr, /kafka: 127\.0\.0\.1:\d+ over SSL, a given CA, a client certificate \(mutual TLS\)/);
    assert.match(verify.stdout, new RegExp(`topic ${output}: ${RECORDS} records read_committed`));
    assert.match(verify.stdout, /^OK$/m);

    const mtls = join(folder, 'mtls.properties');
    await writeFile(
      mtls,
      `bootstrap.servers=127.0.0.1:${ports.mtls}\nsecurity.protocol=SSL\nssl.ca.location=${certs.caPem}\nssl.keystore.location=${certs.clientKeystore}\n`,
    );
    const doctor = await weir(['doctor'], { KAFKA_BROKERS: '', WEIR_KAFKA_CONFIG: mtls, WEIR_KAFKA_SSL_KEYSTORE_PASSWORD: certs.storePassword });
    assert.equal(doctor.code, 0, doctor.stderr);
    assert.match(doctor.stdout, new RegExp(`broker: reachable at 127\\.0\\.0\\.1:${ports.mtls} \\(cluster `));
    assert.match(doctor.stdout, /^OK$/m);
    assert.ok(!`${doctor.stdout}${doctor.stderr}`.includes(certs.storePassword));

    // Without a client certificate the mutual-TLS listener refuses: one clear error.
    const refused = await weir(['doctor', '--brokers', `127.0.0.1:${ports.mtls}`, '--ssl-ca-location', certs.caPem], { KAFKA_BROKERS: '' });
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stderr, /^weir: Kafka at 127\.0\.0\.1:\d+ closed the connection \(.+\)$/m);
    assert.match(refused.stderr, /^hint: a listener that requires client certificates \(ssl\.client\.auth=required\) closes connections without one/m);
  });

  test('readTopic over SASL_SSL with SCRAM-SHA-256, with the settings a properties file and the environment give', async () => {
    assert.ok(output !== '', 'runs after the job test');
    const config = join(folder, 'scram-256.properties');
    await writeFile(
      config,
      `bootstrap.servers=127.0.0.1:${ports.saslSsl}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="weir256" password="${PASSWORD_256}";\nssl.ca.location=${certs.caPem}\n`,
    );
    const settings = loadKafkaSettings({}, { WEIR_KAFKA_CONFIG: config });
    const records = await readTopic({ ...settings, topic: output });
    assert.equal(records.length, RECORDS);
    assert.equal(new Set(records.map((record) => JSON.parse(String(record.value)).seq)).size, RECORDS);
  });

  test('weir demo over SASL_SSL with SCRAM-SHA-512: its job processes get the same settings, and it audits exactly once', async () => {
    const result = await weir(
      [
        'demo',
        '--records',
        '2000',
        '--accounts',
        '10',
        '--crashes',
        '1',
        '--data-dir',
        join(folder, 'demo'),
        '--ui-port',
        '0',
        '--kafka-config',
        join(folder, 'scram-512.properties'),
        '--sasl-username',
        'weir512',
      ],
      { KAFKA_BROKERS: '', WEIR_KAFKA_SASL_PASSWORD: PASSWORD_512 },
    );
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /^Kafka: 127\.0\.0\.1:\d+ over SASL_SSL, SASL SCRAM-SHA-512 as "weir512"/m);
    assert.match(result.stdout, /^exactly once: OK$/m);
    assert.ok(!`${result.stdout}${result.stderr}`.includes(PASSWORD_512));
  });

  test('a wrong password and an untrusted CA: one clear error each, without the password', async () => {
    const wrong = await weir(
      [
        'verify',
        '--topic',
        output || 'any',
        '--brokers',
        `127.0.0.1:${ports.saslSsl}`,
        '--sasl-mechanism',
        'SCRAM-SHA-512',
        '--sasl-username',
        'weir512',
        '--ssl-ca-location',
        certs.caPem,
      ],
      { KAFKA_BROKERS: '', WEIR_KAFKA_SASL_PASSWORD: 'not-the-password' },
    );
    assert.equal(wrong.code, 1, wrong.stdout);
    assert.match(wrong.stderr, /^weir: authentication to Kafka at 127\.0\.0\.1:\d+ failed: .+$/m);
    assert.match(wrong.stderr, /^hint: check the SASL mechanism, user name and password/m);
    assert.ok(!wrong.stderr.includes('not-the-password'), wrong.stderr);

    const untrusted = await weir(['verify', '--topic', output || 'any', '--brokers', `127.0.0.1:${ports.ssl}`, '--ssl-ca-location', certs.otherCaPem], {
      KAFKA_BROKERS: '',
    });
    assert.equal(untrusted.code, 1, untrusted.stdout);
    assert.match(untrusted.stderr, /^weir: the TLS handshake with Kafka at 127\.0\.0\.1:\d+ failed: .+$/m);
    assert.match(untrusted.stderr, /^hint: the broker's certificate is not trusted: set ssl\.ca\.location/m);

    // The same in code: ClusterConnections names the failure.
    const connections = new ClusterConnections([{ host: '127.0.0.1', port: ports.ssl }], { tls: { ca: await readFile(certs.otherCaPem, 'utf8') } });
    try {
      await assert.rejects(connections.metadata([]), (error: unknown) => error instanceof WeirError && error.code === 'KAFKA_TLS_FAILED');
    } finally {
      await connections.close();
    }
  });
});
