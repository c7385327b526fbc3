import { WeirError } from '../../core/errors/weir-error.ts';

export interface BrokerAddress {
  host: string;
  port: number;
}

/**
 * Parses a bootstrap list such as `127.0.0.1:9092,broker2:9092`. `setting` names where the list
 * came from (an option or KAFKA_BROKERS) for the error.
 */
export function parseBootstrap(list: string | readonly string[], setting: string): BrokerAddress[] {
  const entries = (typeof list === 'string' ? list.split(',') : [...list]).map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) {
    throw new WeirError('INVALID_BOOTSTRAP', `${setting} is empty`, { hint: 'give host:port[,host:port...], for example 127.0.0.1:9092' });
  }
  return entries.map((entry) => {
    const match = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(entry);
    const port = match ? Number(match[2]) : Number.NaN;
    if (!match || port < 1 || port > 65535) {
      throw new WeirError('INVALID_BOOTSTRAP', `${setting}: "${entry}" is not host:port`, {
        hint: 'give host:port[,host:port...], for example 127.0.0.1:9092',
      });
    }
    return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port };
  });
}

export function formatBootstrap(brokers: readonly BrokerAddress[]): string {
  return brokers.map((broker) => `${broker.host.includes(':') ? `[${broker.host}]` : broker.host}:${broker.port}`).join(',');
}
