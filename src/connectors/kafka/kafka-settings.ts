import { existsSync, readFileSync, statSync } from 'node:fs';
import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import { WeirError } from '../../core/errors/weir-error.ts';
import { type BrokerAddress, parseBootstrap } from './kafka-connection-options.ts';
import { parseProperties } from './kafka-properties.ts';
import { KAFKA_SETTING_KEYS, kafkaSettingVariable, type SettingKey } from './kafka-setting-keys.ts';

export { KAFKA_SETTING_KEYS, KAFKA_SETTINGS, kafkaSettingVariable, SECRET_SETTING_KEYS } from './kafka-setting-keys.ts';

/**
 * The connection settings every Weir command that talks to Kafka takes (`run`, `verify`, `doctor`,
 * `demo`) and the exported topic reader: one set of names, Kafka's client properties (librdkafka's
 * for PEM files), from three places, the first that has a setting winning:
 *
 *   1. command-line options   --brokers, --security-protocol, --sasl-mechanism, --sasl-username,
 *                             --ssl-ca-location, --ssl-certificate-location, --ssl-key-location
 *   2. environment variables  WEIR_KAFKA_<PROPERTY> (dots become underscores: WEIR_KAFKA_SASL_PASSWORD),
 *                             and KAFKA_BROKERS for bootstrap.servers
 *   3. a properties file      --kafka-config <file>, else WEIR_KAFKA_CONFIG
 *
 * Secrets (sasl.password, ssl.key.password, ssl.keystore.password, sasl.jaas.config) have no
 * command-line option: a process's arguments are visible to every user of the machine (`ps`).
 */
export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/** The command-line options (commander's camelCase names). */
export interface KafkaSettingsOptions {
  brokers?: string | undefined;
  kafkaConfig?: string | undefined;
  securityProtocol?: string | undefined;
  saslMechanism?: string | undefined;
  saslUsername?: string | undefined;
  sslCaLocation?: string | undefined;
  sslCertificateLocation?: string | undefined;
  sslKeyLocation?: string | undefined;
}

/** The command-line option of each setting that has one, by its commander name. */
export const KAFKA_SETTING_FLAGS: Record<keyof Omit<KafkaSettingsOptions, 'kafkaConfig'>, [SettingKey, string]> = {
  brokers: ['bootstrap.servers', '--brokers'],
  securityProtocol: ['security.protocol', '--security-protocol'],
  saslMechanism: ['sasl.mechanism', '--sasl-mechanism'],
  saslUsername: ['sasl.username', '--sasl-username'],
  sslCaLocation: ['ssl.ca.location', '--ssl-ca-location'],
  sslCertificateLocation: ['ssl.certificate.location', '--ssl-certificate-location'],
  sslKeyLocation: ['ssl.key.location', '--ssl-key-location'],
};

/** What a connection needs, resolved: plain data (files read, PEM text loaded), so a structured clone carries it to the workers. */
export interface KafkaSettings {
  bootstrap: BrokerAddress[] | undefined;
  securityProtocol: SecurityProtocol;
  connection: Pick<ConnectionOptions, 'tls' | 'sasl'>;
  /** Where each setting came from (an option, a variable, `file: key`): no values. */
  sources: Record<string, string>;
  /** Keys of the file that Weir does not read. */
  ignored: string[];
}

interface Setting {
  value: string;
  from: string;
}

/**
 * The settings from the options, the environment and the file (in that order of precedence),
 * checked: one clear error naming the setting, where it came from and the fix.
 */
export function loadKafkaSettings(options: KafkaSettingsOptions = {}, env: NodeJS.ProcessEnv = process.env): KafkaSettings {
  const settings = new Map<SettingKey, Setting>();
  const ignored: string[] = [];
  const file = options.kafkaConfig ?? nonEmpty(env.WEIR_KAFKA_CONFIG);
  if (file !== undefined) {
    const fileFrom = options.kafkaConfig !== undefined ? file : `${file} (WEIR_KAFKA_CONFIG)`;
    if (!existsSync(file) || !statSync(file).isFile()) {
      throw new WeirError('INVALID_KAFKA_SETTINGS', `the Kafka config file ${fileFrom} does not exist`, {
        hint: 'give the path of a properties file (bootstrap.servers=..., security.protocol=..., sasl.mechanism=...)',
      });
    }
    for (const [key, entry] of parseProperties(readFileSync(file, 'utf8'), file)) {
      const known = key === 'sasl.mechanisms' ? 'sasl.mechanism' : key;
      if ((KAFKA_SETTING_KEYS as readonly string[]).includes(known)) settings.set(known as SettingKey, { value: entry.value.trim(), from: `${file}: ${key}` });
      else if (!REGISTRY_KEYS.includes(key)) ignored.push(key); // the Schema Registry's are read by its settings
    }
  }
  for (const key of KAFKA_SETTING_KEYS) {
    const variable =
      key === 'bootstrap.servers' ? (nonEmpty(env.WEIR_KAFKA_BOOTSTRAP_SERVERS) ? 'WEIR_KAFKA_BOOTSTRAP_SERVERS' : 'KAFKA_BROKERS') : kafkaSettingVariable(key);
    const value = nonEmpty(env[variable]);
    if (value !== undefined) settings.set(key, { value: value.trim(), from: variable });
  }
  for (const [option, [key, flag]] of Object.entries(KAFKA_SETTING_FLAGS) as [keyof typeof KAFKA_SETTING_FLAGS, [SettingKey, string]][]) {
    const value = nonEmpty(options[option]);
    if (value !== undefined) settings.set(key, { value: value.trim(), from: flag });
  }
  return resolveSettings(settings, ignored);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** The Schema Registry's keys in a client properties file (schema-registry-settings.ts reads them). */
const REGISTRY_KEYS: readonly string[] = ['schema.registry.url', 'basic.auth.credentials.source', 'basic.auth.user.info', 'schema.registry.ssl.ca.location'];

const protocolSchema = z.enum(SECURITY_PROTOCOLS);
const mechanismSchema = z.enum(SASL_MECHANISMS);

function resolveSettings(settings: Map<SettingKey, Setting>, ignored: string[]): KafkaSettings {
  const get = (key: SettingKey) => settings.get(key);
  const invalid = (key: SettingKey, problem: string, hint: string) =>
    new WeirError('INVALID_KAFKA_SETTINGS', `${key} (from ${get(key)?.from ?? 'nowhere'}) ${problem}`, { hint });
  const sources: Record<string, string> = {};
  for (const [key, setting] of settings) sources[key] = setting.from;

  const bootstrapSetting = get('bootstrap.servers');
  const bootstrap = bootstrapSetting === undefined ? undefined : parseBootstrap(bootstrapSetting.value, `bootstrap.servers (from ${bootstrapSetting.from})`);

  // SASL: the mechanism, the user and the password (or Java's sasl.jaas.config, which holds the last two).
  let username = get('sasl.username')?.value;
  let password = get('sasl.password')?.value;
  const jaas = get('sasl.jaas.config');
  if (jaas !== undefined) {
    const fields = new Map(
      [...jaas.value.matchAll(/(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"/g)].map((match) => [match[1] as string, (match[2] as string).replace(/\\(.)/g, '$1')]),
    );
    if (!/LoginModule\s+required/.test(jaas.value) || !fields.has('username') || !fields.has('password')) {
      throw invalid(
        'sasl.jaas.config',
        'is not a login module line with a username and a password (its value is not shown: it holds a secret)',
        'write org.apache.kafka.common.security.scram.ScramLoginModule required username="..." password="..."; or use sasl.username and sasl.password',
      );
    }
    username = get('sasl.username')?.value ?? fields.get('username');
    password = get('sasl.password')?.value ?? fields.get('password');
  }
  const mechanismSetting = get('sasl.mechanism');
  let mechanism: SaslMechanism | undefined;
  if (mechanismSetting !== undefined) {
    const parsed = mechanismSchema.safeParse(mechanismSetting.value.toUpperCase());
    if (!parsed.success) {
      throw invalid(
        'sasl.mechanism',
        `is "${mechanismSetting.value}", which Weir does not support`,
        `use one of ${SASL_MECHANISMS.join(', ')}${mechanismSetting.value.toUpperCase() === 'OAUTHBEARER' ? " (OAUTHBEARER needs a token provider: pass connection: { sasl: { mechanism: 'OAUTHBEARER', token } } to the connectors in code)" : ''}`,
      );
    }
    mechanism = parsed.data;
  }
  const wantsSasl = mechanism !== undefined || username !== undefined || password !== undefined;

  // TLS: PEM text or files (a CA, and for mutual TLS a certificate and its key), or a PKCS#12 keystore.
  const tls: NonNullable<ConnectionOptions['tls']> = {};
  const pem = (fileKey: SettingKey, pemKey: SettingKey, marker: string): string | undefined => {
    const inline = get(pemKey);
    if (inline !== undefined) {
      if (!isPem(inline.value, marker)) {
        throw invalid(pemKey, `is not PEM text (no "-----BEGIN ...${marker}" line)`, `give the PEM text, or a PEM file with ${fileKey}`);
      }
      return inline.value.replace(/\\n/g, '\n');
    }
    const location = get(fileKey);
    if (location === undefined) return undefined;
    const text = readSettingFile(location.value, () =>
      invalid(fileKey, `names ${location.value}, which does not exist`, `give the path of a PEM file (${marker.toLowerCase()})`),
    );
    if (!isPem(text.toString('latin1'), marker)) {
      throw invalid(
        fileKey,
        `names ${location.value}, which is not a PEM file (no "-----BEGIN ...${marker}" line)`,
        isJks(text)
          ? 'it is a Java keystore (JKS), which Node cannot read: export the certificate as PEM with `keytool -exportcert -rfc -alias <alias> -keystore <file> -file cert.pem`'
          : 'Node reads PEM: convert a DER file with `openssl x509 -inform der -in <file> -out cert.pem`',
      );
    }
    return text.toString('utf8');
  };
  const ca = pem('ssl.ca.location', 'ssl.ca.pem', 'CERTIFICATE');
  const cert = pem('ssl.certificate.location', 'ssl.certificate.pem', 'CERTIFICATE');
  const key = pem('ssl.key.location', 'ssl.key.pem', 'PRIVATE KEY');
  if (ca !== undefined) tls.ca = ca;
  if (cert !== undefined) tls.cert = cert;
  if (key !== undefined) tls.key = key;
  if ((cert === undefined) !== (key === undefined)) {
    const [given, missing] =
      cert === undefined ? (['ssl.key.location', 'ssl.certificate.location'] as const) : (['ssl.certificate.location', 'ssl.key.location'] as const);
    throw new WeirError('INVALID_KAFKA_SETTINGS', `${given} is set but ${missing} is not: mutual TLS needs the client certificate and its private key`, {
      hint: `set ${missing} (a PEM file) too, or leave both out for server-only TLS`,
    });
  }
  const keyPassword = get('ssl.key.password')?.value;
  if (keyPassword !== undefined) tls.passphrase = keyPassword;
  const truststore = get('ssl.truststore.location');
  if (truststore !== undefined) {
    throw invalid(
      'ssl.truststore.location',
      'is a Java truststore (JKS or PKCS#12), which Node cannot use as its trusted certificates',
      'export the CA certificate as PEM (`keytool -exportcert -rfc -alias <alias> -keystore <truststore> -file ca.pem`) and set ssl.ca.location=ca.pem',
    );
  }
  const keystore = get('ssl.keystore.location');
  if (keystore !== undefined) {
    if (cert !== undefined) {
      throw invalid(
        'ssl.keystore.location',
        'and ssl.certificate.location are both set',
        'give the client certificate one way: a PKCS#12 keystore, or PEM files',
      );
    }
    const bytes = readSettingFile(keystore.value, () =>
      invalid('ssl.keystore.location', `names ${keystore.value}, which does not exist`, 'give the path of a PKCS#12 keystore (.p12)'),
    );
    if (isJks(bytes)) {
      throw invalid(
        'ssl.keystore.location',
        `names ${keystore.value}, a Java keystore (JKS), which Node cannot read`,
        'convert it to PKCS#12: `keytool -importkeystore -srckeystore <file> -destkeystore client.p12 -deststoretype PKCS12`',
      );
    }
    tls.pfx = bytes;
    const storePassword = get('ssl.keystore.password')?.value ?? keyPassword;
    if (storePassword !== undefined) tls.passphrase = storePassword;
  }
  const verification = get('enable.ssl.certificate.verification');
  if (verification !== undefined) {
    if (!/^(true|false)$/i.test(verification.value)) throw invalid('enable.ssl.certificate.verification', `is "${verification.value}"`, 'write true or false');
    if (verification.value.toLowerCase() === 'false') tls.rejectUnauthorized = false;
  }
  const endpoint = get('ssl.endpoint.identification.algorithm');
  if (endpoint !== undefined && endpoint.value.toLowerCase() !== 'https') {
    throw invalid(
      'ssl.endpoint.identification.algorithm',
      `is "${endpoint.value}": Weir always checks that the broker's certificate names the host it connects to`,
      "give the broker a certificate whose subject alternative names hold its host name or IP address, or leave the setting out (or set it to 'https')",
    );
  }
  const wantsTls = Object.keys(tls).length > 0;

  // The protocol: given, or what the other settings imply.
  const protocolSetting = get('security.protocol');
  let securityProtocol: SecurityProtocol;
  if (protocolSetting !== undefined) {
    const parsed = protocolSchema.safeParse(protocolSetting.value.toUpperCase());
    if (!parsed.success) throw invalid('security.protocol', `is "${protocolSetting.value}"`, `use one of ${SECURITY_PROTOCOLS.join(', ')}`);
    securityProtocol = parsed.data;
  } else {
    securityProtocol = wantsSasl ? (wantsTls ? 'SASL_SSL' : 'SASL_PLAINTEXT') : wantsTls ? 'SSL' : 'PLAINTEXT';
  }
  const usesSasl = securityProtocol.startsWith('SASL_');
  const usesTls = securityProtocol.endsWith('SSL');
  if (!usesTls && wantsTls) {
    const tlsKey = [...settings.keys()].find((entry) => entry.startsWith('ssl.') || entry === 'enable.ssl.certificate.verification') as SettingKey;
    throw invalid(
      'security.protocol',
      `is ${securityProtocol}, but ${tlsKey} is set (from ${get(tlsKey)?.from})`,
      `set security.protocol to ${usesSasl ? 'SASL_SSL' : 'SSL'}, or leave out the ssl.* settings`,
    );
  }
  if (!usesSasl && wantsSasl) {
    throw invalid(
      'security.protocol',
      `is ${securityProtocol}, but SASL settings are given`,
      `set security.protocol to ${usesTls ? 'SASL_SSL' : 'SASL_PLAINTEXT'}, or leave out the sasl.* settings`,
    );
  }
  const connection: KafkaSettings['connection'] = {};
  if (usesTls) connection.tls = tls;
  if (usesSasl) {
    if (mechanism === undefined) {
      const trigger = (['sasl.username', 'sasl.password', 'sasl.jaas.config'] as const).find((key) => get(key) !== undefined);
      const why =
        protocolSetting !== undefined || trigger === undefined
          ? `security.protocol is ${securityProtocol}`
          : `${trigger} is set (from ${get(trigger)?.from}), which turns SASL on,`;
      throw new WeirError('INVALID_KAFKA_SETTINGS', `${why} but sasl.mechanism is not set`, {
        hint: `set sasl.mechanism (--sasl-mechanism, ${kafkaSettingVariable('sasl.mechanism')} or the file) to one of ${SASL_MECHANISMS.join(', ')}`,
      });
    }
    if (username === undefined) {
      throw new WeirError('INVALID_KAFKA_SETTINGS', `SASL ${mechanism} needs a user name, and sasl.username is not set`, {
        hint: `set sasl.username (--sasl-username, ${kafkaSettingVariable('sasl.username')} or the file)`,
      });
    }
    if (password === undefined) {
      throw new WeirError('INVALID_KAFKA_SETTINGS', `SASL ${mechanism} needs a password, and sasl.password is not set`, {
        hint: `set ${kafkaSettingVariable('sasl.password')}, or sasl.password in the --kafka-config file (there is no option for it: a command line is visible to every user of the machine)`,
      });
    }
    connection.sasl = { mechanism, username, password };
  }
  return { bootstrap, securityProtocol, connection, sources, ignored };
}

function readSettingFile(path: string, missing: () => WeirError): Buffer {
  if (!existsSync(path) || !statSync(path).isFile()) throw missing();
  return readFileSync(path);
}

function isPem(text: string, marker: string): boolean {
  return new RegExp(`-----BEGIN [A-Z0-9 ]*${marker}-----`).test(text);
}

/** A Java KeyStore starts with the magic number 0xFEEDFEED. */
function isJks(bytes: Buffer): boolean {
  return bytes.length >= 4 && bytes.readUInt32BE(0) === 0xfeedfeed;
}
