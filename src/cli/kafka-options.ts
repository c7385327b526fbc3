import { type Command, Help, Option } from 'commander';
import { describeKafkaSettings, setDefaultKafkaSettings } from '../connectors/kafka/kafka-default-connection.ts';
import {
  type KafkaSettings,
  type KafkaSettingsOptions,
  kafkaSettingVariable,
  loadKafkaSettings,
  SASL_MECHANISMS,
  SECURITY_PROTOCOLS,
} from '../connectors/kafka/kafka-settings.ts';
import { bootstrapOf, DEFAULT_DATA_DIR, runningLocalBroker } from '../local-kafka/local-broker.ts';

const KAFKA_FLAGS = [
  '--brokers',
  '--kafka-config',
  '--security-protocol',
  '--sasl-mechanism',
  '--sasl-username',
  '--ssl-ca-location',
  '--ssl-certificate-location',
  '--ssl-key-location',
];

/**
 * The connection options of every command that talks to Kafka (run, verify, doctor, demo): the
 * same names, the same environment variables, the same properties file (kafka-settings.ts).
 */
export function addKafkaOptions(command: Command): Command {
  const kafkaFlags = new Set(KAFKA_FLAGS);
  return command
    .configureHelp({
      // The command's own options first, then these, then --help.
      visibleOptions(this: Help, cmd: Command) {
        const options = Help.prototype.visibleOptions.call(this, cmd);
        const rank = (option: Option) => (option.long === '--help' ? 2 : kafkaFlags.has(option.long ?? '') ? 1 : 0);
        return options
          .map((option, index) => ({ option, index }))
          .sort((a, b) => rank(a.option) - rank(b.option) || a.index - b.index)
          .map(({ option }) => option);
      },
    })
    .option(
      '--brokers <host:port,...>',
      'the cluster: bootstrap.servers (default KAFKA_BROKERS, else the --kafka-config file, else the broker `weir kafka start` runs from this folder)',
    )
    .option(
      '--kafka-config <file>',
      'a Kafka client properties file: bootstrap.servers, security.protocol, sasl.mechanism, sasl.username, sasl.password (or sasl.jaas.config), ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password, ssl.keystore.location (PKCS#12) (default WEIR_KAFKA_CONFIG)',
    )
    .addOption(
      new Option(
        '--security-protocol <protocol>',
        'security.protocol (default: SSL, SASL_PLAINTEXT or SASL_SSL when TLS or SASL settings are given, else PLAINTEXT)',
      ).choices(SECURITY_PROTOCOLS),
    )
    .addOption(new Option('--sasl-mechanism <mechanism>', 'sasl.mechanism').choices(SASL_MECHANISMS))
    .option(
      '--sasl-username <name>',
      'sasl.username; the password has no option (a command line is visible to every user): WEIR_KAFKA_SASL_PASSWORD or the file',
    )
    .option('--ssl-ca-location <file>', "ssl.ca.location: PEM file of the CA that signed the brokers' certificates")
    .option('--ssl-certificate-location <file>', 'ssl.certificate.location: PEM client certificate, for mutual TLS')
    .option(
      '--ssl-key-location <file>',
      "ssl.key.location: PEM private key of the client certificate (its passphrase: WEIR_KAFKA_SSL_KEY_PASSWORD or the file's ssl.key.password)",
    )
    .addHelpText(
      'after',
      '\nKafka connection settings: options first, then environment variables (WEIR_KAFKA_<PROPERTY>, e.g. WEIR_KAFKA_SASL_PASSWORD,\nWEIR_KAFKA_SSL_CA_LOCATION; KAFKA_BROKERS for bootstrap.servers), then the --kafka-config / WEIR_KAFKA_CONFIG file.',
    );
}

/**
 * Loads the settings a command was given, makes them the default of every Kafka connector and
 * reader in this process (and, for `weir run`, its worker threads), and says how it connects
 * (without a secret) and which file keys it does not read.
 */
export function useKafkaSettings(options: KafkaSettingsOptions, log: (line: string) => void): KafkaSettings {
  let settings = loadKafkaSettings(options, process.env);
  // The same file gives the Schema Registry settings (schema.registry.url, basic.auth.user.info), in
  // this process and its worker threads, which read them from WEIR_KAFKA_CONFIG.
  if (options.kafkaConfig !== undefined) process.env.WEIR_KAFKA_CONFIG = options.kafkaConfig;
  if (settings.bootstrap === undefined) {
    // No brokers given anywhere: the broker `weir kafka start` runs from this folder, if it does.
    const local = runningLocalBroker();
    if (local !== undefined) {
      settings = { ...settings, bootstrap: [{ host: local.host, port: local.port }] };
      log(`kafka: no brokers given (--brokers, KAFKA_BROKERS, --kafka-config): the local broker of ${DEFAULT_DATA_DIR} at ${bootstrapOf(local)}`);
    }
  }
  setDefaultKafkaSettings(settings);
  if (settings.ignored.length > 0) log(`kafka config: not read by Weir (ignored): ${settings.ignored.join(', ')}`);
  if (settings.securityProtocol !== 'PLAINTEXT') log(`kafka: ${describeKafkaSettings(settings)}`);
  return settings;
}

/** The options as the environment variables a child `weir run` reads (the demo's job processes): never a secret on a command line. */
export function kafkaSettingsEnv(options: KafkaSettingsOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  if (options.kafkaConfig !== undefined) env.WEIR_KAFKA_CONFIG = options.kafkaConfig;
  const keys: [keyof KafkaSettingsOptions, string][] = [
    ['brokers', 'bootstrap.servers'],
    ['securityProtocol', 'security.protocol'],
    ['saslMechanism', 'sasl.mechanism'],
    ['saslUsername', 'sasl.username'],
    ['sslCaLocation', 'ssl.ca.location'],
    ['sslCertificateLocation', 'ssl.certificate.location'],
    ['sslKeyLocation', 'ssl.key.location'],
  ];
  for (const [option, key] of keys) {
    const value = options[option];
    if (value !== undefined) env[kafkaSettingVariable(key)] = value;
  }
  return env;
}
