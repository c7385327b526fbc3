import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { describeKafkaSettings } from '../../../../src/connectors/kafka/kafka-default-connection.ts';
import { parseProperties } from '../../../../src/connectors/kafka/kafka-properties.ts';
import { loadKafkaSettings } from '../../../../src/connectors/kafka/kafka-settings.ts';
import { clearWeirError } from '../../../harness/weir-error.ts';

const folder = mkdtempSync(join(tmpdir(), 'weir-kafka-settings-'));
after(() => rmSync(folder, { recursive: true, force: true }));
const file = (name: string, text: string | Buffer) => {
  const path = join(folder, name);
  writeFileSync(path, text);
  return path;
};
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
const SECRET = 'pa55-w0rd-never-shown';

test('properties: separators, comments, continuations and escapes', () => {
  const properties = parseProperties('# comment\n! also\n a=1\nb : 2\nc 3\nd=x\\\n   y\ne=tab\\there\\u0041\nf\\=g=h\n', 'f.properties');
  assert.deepEqual(
    [...properties].map(([key, entry]) => [key, entry.value]),
    [
      ['a', '1'],
      ['b', '2'],
      ['c', '3'],
      ['d', 'xy'],
      ['e', 'tab\there\u0041'],
      ['f=g', 'h'],
    ],
  );
});

test('nothing given: PLAINTEXT, no brokers, no TLS or SASL', () => {
  const settings = loadKafkaSettings({}, {});
  assert.equal(settings.securityProtocol, 'PLAINTEXT');
  assert.equal(settings.bootstrap, undefined);
  assert.deepEqual(settings.connection, {});
});

test('a Kafka client properties file: SASL_SSL with SCRAM from sasl.jaas.config, a PEM CA; unknown keys are reported', () => {
  const ca = file('ca.pem', CERT);
  const config = file(
    'client.properties',
    [
      'bootstrap.servers=broker1:9093,broker2:9093',
      'security.protocol=SASL_SSL',
      'sasl.mechanism=SCRAM-SHA-512',
      `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="weir" password="${SECRET}";`,
      `ssl.ca.location=${ca}`,
      'client.id=my-tool',
    ].join('\n'),
  );
  const settings = loadKafkaSettings({ kafkaConfig: config }, {});
  assert.deepEqual(settings.bootstrap, [
    { host: 'broker1', port: 9093 },
    { host: 'broker2', port: 9093 },
  ]);
  assert.equal(settings.securityProtocol, 'SASL_SSL');
  assert.deepEqual(settings.connection, { tls: { ca: CERT }, sasl: { mechanism: 'SCRAM-SHA-512', username: 'weir', password: SECRET } });
  assert.deepEqual(settings.ignored, ['client.id']);
  const described = describeKafkaSettings(settings);
  assert.match(described, /broker1:9093,broker2:9093 over SASL_SSL, SASL SCRAM-SHA-512 as "weir", a given CA/);
  assert.doesNotMatch(`${described} ${JSON.stringify(settings.sources)}`, new RegExp(SECRET));
});

test('precedence: options over environment variables over the file (WEIR_KAFKA_CONFIG names it)', () => {
  const config = file('p.properties', 'bootstrap.servers=file:1\nsasl.mechanism=PLAIN\nsasl.username=from-file\nsasl.password=file-secret\n');
  const env = { WEIR_KAFKA_CONFIG: config, KAFKA_BROKERS: 'env:2', WEIR_KAFKA_SASL_USERNAME: 'from-env', WEIR_KAFKA_SASL_PASSWORD: SECRET };
  const fromEnv = loadKafkaSettings({}, env);
  assert.deepEqual(fromEnv.bootstrap, [{ host: 'env', port: 2 }]);
  assert.deepEqual(fromEnv.connection.sasl, { mechanism: 'PLAIN', username: 'from-env', password: SECRET });
  assert.equal(fromEnv.securityProtocol, 'SASL_PLAINTEXT');
  assert.equal(fromEnv.sources['sasl.password'], 'WEIR_KAFKA_SASL_PASSWORD');
  assert.equal(fromEnv.sources['sasl.mechanism'], `${config}: sasl.mechanism`);
  const fromOptions = loadKafkaSettings({ brokers: 'option:3', saslUsername: 'from-option', saslMechanism: 'SCRAM-SHA-256' }, env);
  assert.deepEqual(fromOptions.bootstrap, [{ host: 'option', port: 3 }]);
  assert.deepEqual(fromOptions.connection.sasl, { mechanism: 'SCRAM-SHA-256', username: 'from-option', password: SECRET });
});

test('mutual TLS from PEM files, and from a PKCS#12 keystore (Node reads it as pfx)', () => {
  const ca = file('ca2.pem', CERT);
  const cert = file('client.pem', CERT);
  const key = file('client.key', KEY);
  const pem = loadKafkaSettings({ sslCaLocation: ca, sslCertificateLocation: cert, sslKeyLocation: key }, { WEIR_KAFKA_SSL_KEY_PASSWORD: SECRET });
  assert.equal(pem.securityProtocol, 'SSL');
  assert.deepEqual(pem.connection, { tls: { ca: CERT, cert: CERT, key: KEY, passphrase: SECRET } });
  const keystore = file('client.p12', Buffer.from([0x30, 0x82, 0x01, 0x02]));
  const p12 = loadKafkaSettings({ kafkaConfig: file('k.properties', `ssl.keystore.location=${keystore}\nssl.keystore.password=${SECRET}\n`) }, {});
  assert.deepEqual(p12.connection.tls?.pfx, Buffer.from([0x30, 0x82, 0x01, 0x02]));
  assert.equal(p12.connection.tls?.passphrase, SECRET);
  assert.match(describeKafkaSettings(p12), /a client certificate \(mutual TLS\), from ssl\.keystore\.location/);
});

test('each mistake is one clear error naming the setting, where it came from and the fix; no secret in it', () => {
  const checks: [() => unknown, RegExp, RegExp, ('INVALID_KAFKA_SETTINGS' | 'INVALID_BOOTSTRAP')?][] = [
    [
      () => loadKafkaSettings({ saslMechanism: 'SCRAM-SHA-1', saslUsername: 'u' }, { WEIR_KAFKA_SASL_PASSWORD: SECRET }),
      /^sasl\.mechanism \(from --sasl-mechanism\) is "SCRAM-SHA-1", which Weir does not support$/,
      /PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/,
    ],
    [
      () => loadKafkaSettings({ securityProtocol: 'TLS' }, {}),
      /^security\.protocol \(from --security-protocol\) is "TLS"$/,
      /PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL/,
    ],
    [
      () => loadKafkaSettings({ sslCaLocation: join(folder, 'missing-ca.pem') }, {}),
      /^ssl\.ca\.location \(from --ssl-ca-location\) names .*missing-ca\.pem, which does not exist$/,
      /PEM/,
    ],
    [
      () => loadKafkaSettings({ kafkaConfig: join(folder, 'nope.properties') }, {}),
      /^the Kafka config file .*nope\.properties does not exist$/,
      /properties file/,
    ],
    [
      () => loadKafkaSettings({}, { WEIR_KAFKA_CONFIG: join(folder, 'nope.properties') }),
      /nope\.properties \(WEIR_KAFKA_CONFIG\) does not exist$/,
      /properties/,
    ],
    [() => loadKafkaSettings({ sslCaLocation: file('jks', Buffer.from([0xfe, 0xed, 0xfe, 0xed, 0, 0])) }, {}), /is not a PEM file/, /keytool -exportcert -rfc/],
    [
      () => loadKafkaSettings({ kafkaConfig: file('t.properties', 'ssl.truststore.location=/x/truststore.jks\nssl.truststore.password=x\n') }, {}),
      /^ssl\.truststore\.location .* Node cannot use/,
      /ssl\.ca\.location/,
    ],
    [
      () =>
        loadKafkaSettings({ kafkaConfig: file('ks.properties', `ssl.keystore.location=${file('ks.jks', Buffer.from([0xfe, 0xed, 0xfe, 0xed, 1]))}\n`) }, {}),
      /a Java keystore \(JKS\), which Node cannot read$/,
      /keytool -importkeystore/,
    ],
    [
      () => loadKafkaSettings({ sslCertificateLocation: file('c.pem', CERT) }, {}),
      /^ssl\.certificate\.location is set but ssl\.key\.location is not/,
      /ssl\.key\.location/,
    ],
    [
      () => loadKafkaSettings({ saslMechanism: 'PLAIN', saslUsername: 'u' }, {}),
      /^SASL PLAIN needs a password, and sasl\.password is not set$/,
      /WEIR_KAFKA_SASL_PASSWORD.*no option/,
    ],
    [() => loadKafkaSettings({ securityProtocol: 'SASL_SSL' }, {}), /^security\.protocol is SASL_SSL but sasl\.mechanism is not set$/, /--sasl-mechanism/],
    [
      () => loadKafkaSettings({}, { WEIR_KAFKA_SASL_PASSWORD: SECRET }),
      /^sasl\.password is set \(from WEIR_KAFKA_SASL_PASSWORD\), which turns SASL on, but sasl\.mechanism is not set$/,
      /PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/,
    ],
    [
      () => loadKafkaSettings({ securityProtocol: 'PLAINTEXT', sslCaLocation: file('ca3.pem', CERT) }, {}),
      /^security\.protocol \(from --security-protocol\) is PLAINTEXT, but ssl\.ca\.location is set/,
      /SSL/,
    ],
    [
      () => loadKafkaSettings({ kafkaConfig: file('j.properties', `sasl.mechanism=PLAIN\nsasl.jaas.config=password="${SECRET}"\n`) }, {}),
      /^sasl\.jaas\.config \(from .*\) is not a login module line/,
      /ScramLoginModule required username=/,
    ],
    [
      () => loadKafkaSettings({ brokers: 'no-port' }, {}),
      /^bootstrap\.servers \(from --brokers\): "no-port" is not host:port$/,
      /host:port/,
      'INVALID_BOOTSTRAP',
    ],
  ];
  for (const [load, message, hint, code = 'INVALID_KAFKA_SETTINGS'] of checks) {
    assert.throws(load, (error: unknown) => {
      clearWeirError(code, message, hint)(error);
      assert.doesNotMatch(`${(error as Error).message} ${(error as { hint?: string }).hint}`, new RegExp(SECRET));
      return true;
    });
  }
});
