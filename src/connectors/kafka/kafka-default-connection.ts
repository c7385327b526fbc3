import type { ConnectionOptions } from '@platformatic/kafka';
import { connectorDefault, connectorDefaults, setConnectorDefaults } from '../../core/config/connector-defaults.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { type BrokerAddress, formatBootstrap, parseBootstrap } from './kafka-connection-options.ts';
import { type KafkaSettings, loadKafkaSettings } from './kafka-settings.ts';

/**
 * The default connection of every Kafka source, sink and reader that does not set its own: the
 * settings the command line resolved (`weir run` hands them to its worker threads through
 * core/config/connector-defaults.ts), else those of the environment (WEIR_KAFKA_*, KAFKA_BROKERS,
 * WEIR_KAFKA_CONFIG). A connector's own `bootstrap` and `connection` options win, each on its own.
 */
export function setDefaultKafkaSettings(settings: KafkaSettings): void {
  setConnectorDefaults({ ...connectorDefaults(), kafka: settings });
}

export function defaultKafkaSettings(): KafkaSettings {
  return (connectorDefault('kafka') as KafkaSettings | undefined) ?? loadKafkaSettings({}, process.env);
}

export interface ResolvedKafkaConnection {
  bootstrap: BrokerAddress[];
  connection: ConnectionOptions;
}

/** A connector's brokers and TLS/SASL options: its own, else the defaults; one clear error when there are no brokers. */
export function resolveKafkaConnection(
  options: { bootstrap?: string | readonly string[] | readonly BrokerAddress[] | undefined; connection?: ConnectionOptions | undefined },
  connector: string,
): ResolvedKafkaConnection {
  const own = options.bootstrap;
  const needsDefaults = own === undefined || options.connection === undefined;
  const defaults = needsDefaults ? defaultKafkaSettings() : undefined;
  let bootstrap: BrokerAddress[] | undefined;
  if (own !== undefined) {
    bootstrap =
      typeof own === 'string' || (own as readonly unknown[]).every((entry) => typeof entry === 'string')
        ? parseBootstrap(own as string | readonly string[], `${connector} bootstrap`)
        : [...(own as readonly BrokerAddress[])];
  } else {
    bootstrap = defaults?.bootstrap;
  }
  if (bootstrap === undefined) {
    throw new WeirError('NO_BOOTSTRAP', `${connector} has no brokers: neither its bootstrap option nor KAFKA_BROKERS is set`, {
      hint: 'pass bootstrap: "host:port" to the connector, set KAFKA_BROKERS, give the command --brokers or a --kafka-config file with bootstrap.servers, or start a local broker in this folder (weir kafka start)',
    });
  }
  return { bootstrap, connection: options.connection ?? { ...defaults?.connection } };
}

/** One line on how a command connects, without a secret: brokers, protocol, mechanism and user, files. */
export function describeKafkaSettings(settings: Pick<KafkaSettings, 'bootstrap' | 'securityProtocol' | 'connection' | 'sources'>): string {
  const parts = [`${settings.bootstrap === undefined ? '(no brokers)' : formatBootstrap(settings.bootstrap)} over ${settings.securityProtocol}`];
  const sasl = settings.connection.sasl;
  if (sasl !== undefined) parts.push(`SASL ${sasl.mechanism} as "${typeof sasl.username === 'string' ? sasl.username : '(provider)'}"`);
  const tls = settings.connection.tls;
  if (tls !== undefined) {
    const files = ['ssl.ca.location', 'ssl.certificate.location', 'ssl.key.location', 'ssl.keystore.location'].filter(
      (key) => settings.sources[key] !== undefined,
    );
    parts.push(
      tls.ca === undefined ? "the system's trusted CAs" : 'a given CA',
      tls.cert !== undefined || tls.pfx !== undefined ? 'a client certificate (mutual TLS)' : 'no client certificate',
    );
    if (tls.rejectUnauthorized === false) parts.push('CERTIFICATE VERIFICATION OFF');
    if (files.length > 0) parts.push(`from ${files.join(', ')}`);
  }
  return parts.join(', ');
}
