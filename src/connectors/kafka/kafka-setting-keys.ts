/**
 * The Kafka client properties Weir's connection settings read (kafka-settings.ts), with what each
 * does: Kafka's own names, librdkafka's for PEM files. Any other key of a properties file is
 * reported back as ignored, as Kafka's clients warn about a setting they do not know.
 */
export const KAFKA_SETTINGS = {
  'bootstrap.servers': 'The brokers, `host:port[,host:port...]`.',
  'security.protocol': '`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`. Default: what the other settings imply (`ssl.*` makes it SSL, `sasl.*` SASL).',
  'sasl.mechanism': "`PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512` (librdkafka's `sasl.mechanisms` is read too).",
  'sasl.username': 'The SASL user.',
  'sasl.password': "The SASL user's password. Secret: no command-line option.",
  'sasl.jaas.config':
    'Java\'s form of the user and password: `org.apache.kafka.common.security.scram.ScramLoginModule required username="..." password="...";`. Secret.',
  'ssl.ca.location': "PEM file of the CA (or CAs) that signed the brokers' certificates. Default: Node's trusted CAs.",
  'ssl.ca.pem': 'The same as PEM text.',
  'ssl.certificate.location': 'PEM file of the client certificate, for mutual TLS (with `ssl.key.location`).',
  'ssl.certificate.pem': 'The same as PEM text.',
  'ssl.key.location': "PEM file of the client certificate's private key.",
  'ssl.key.pem': 'The same as PEM text. Secret.',
  'ssl.key.password': 'The passphrase of an encrypted private key. Secret.',
  'ssl.keystore.location':
    'A PKCS#12 keystore (`.p12`) with the client certificate and key, instead of the PEM files; a JKS keystore is refused with the keytool command that converts it.',
  'ssl.keystore.password': "The keystore's password. Secret.",
  'ssl.truststore.location':
    'Refused: Node cannot read Java truststores; the error gives the keytool command that exports the CA as PEM for `ssl.ca.location`.',
  'ssl.endpoint.identification.algorithm': "`https` (the default) only: Weir always checks that the broker's certificate names its host.",
  'enable.ssl.certificate.verification': '`false` turns certificate verification off (insecure; for tests only).',
} as const;

export type SettingKey = keyof typeof KAFKA_SETTINGS;
export const KAFKA_SETTING_KEYS = Object.keys(KAFKA_SETTINGS) as SettingKey[];

/** Settings whose values are secrets: never printed, never in an error, never persisted; no command-line option. */
export const SECRET_SETTING_KEYS: ReadonlySet<string> = new Set([
  'sasl.password',
  'sasl.jaas.config',
  'ssl.key.password',
  'ssl.keystore.password',
  'ssl.key.pem',
]);

/** The environment variable of a setting: WEIR_KAFKA_ and the property in capitals, dots as underscores; KAFKA_BROKERS for bootstrap.servers. */
export function kafkaSettingVariable(key: string): string {
  return key === 'bootstrap.servers' ? 'KAFKA_BROKERS' : `WEIR_KAFKA_${key.toUpperCase().replace(/\./g, '_')}`;
}
