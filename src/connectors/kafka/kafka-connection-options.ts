import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import { WeirError } from '../../core/errors/weir-error.ts';
import { addWeirIssue, type OptionMeta } from '../connector-options.ts';

/**
 * How Weir reaches a Kafka cluster, in one place: the bootstrap list (`host:port[,host:port...]`,
 * from a connector's `bootstrap` option or KAFKA_BROKERS) and the TLS/SASL `connection` options,
 * with their zod schemas for the connectors' option tables.
 */
export interface BrokerAddress {
  host: string;
  port: number;
}

const BOOTSTRAP_HINT = 'give host:port[,host:port...], for example 127.0.0.1:9092';

/**
 * Parses a bootstrap list such as `127.0.0.1:9092,broker2:9092`. `setting` names where the list
 * came from (an option or KAFKA_BROKERS) for the error.
 */
export function parseBootstrap(list: string | readonly string[], setting: string): BrokerAddress[] {
  const entries = (typeof list === 'string' ? list.split(',') : [...list]).map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) {
    throw new WeirError('INVALID_BOOTSTRAP', `${setting} is empty`, { hint: BOOTSTRAP_HINT });
  }
  return entries.map((entry) => {
    const match = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(entry);
    const port = match ? Number(match[2]) : Number.NaN;
    if (!match || port < 1 || port > 65535) {
      throw new WeirError('INVALID_BOOTSTRAP', `${setting}: "${entry}" is not host:port`, { hint: BOOTSTRAP_HINT });
    }
    return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port };
  });
}

export function formatBootstrap(brokers: readonly BrokerAddress[]): string {
  return brokers.map((broker) => `${broker.host.includes(':') ? `[${broker.host}]` : broker.host}:${broker.port}`).join(',');
}

/** The `bootstrap` option: a `host:port` list, checked now so a typo fails when the job is built. */
export function bootstrapOption(connector: string) {
  return z
    .union([z.string(), z.array(z.string())], { error: 'must be "host:port[,host:port...]" or an array of "host:port"' })
    .superRefine((value, context) => {
      try {
        parseBootstrap(value, `${connector} bootstrap`);
      } catch (error) {
        addWeirIssue(context, value, error);
      }
    })
    .optional()
    .meta({
      description: 'The brokers: `host:port[,host:port...]`, or an array of `host:port`.',
      hint: BOOTSTRAP_HINT,
      defaultText: "the command's Kafka settings: --brokers, else KAFKA_BROKERS, else the --kafka-config file",
    } satisfies OptionMeta);
}

/** The SASL mechanisms a connector's `connection.sasl` can name (OAUTHBEARER with a token or a token provider). */
export const CONNECTION_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;

/**
 * The `connection` option: passed unchanged to every connection (@platformatic/kafka's
 * ConnectionOptions), its SASL mechanism and the shape of `tls` checked now. No error shows a
 * value of it: it holds secrets.
 */
export function connectionOption() {
  return z
    .custom<ConnectionOptions>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), { error: 'must be an object' })
    .superRefine((value, context) => {
      const { sasl, tls } = value as { sasl?: unknown; tls?: unknown };
      if (sasl !== undefined) {
        const mechanism = (sasl as { mechanism?: unknown } | null)?.mechanism;
        if (!(CONNECTION_SASL_MECHANISMS as readonly unknown[]).includes(mechanism)) {
          context.addIssue({
            code: 'custom',
            message: `sasl.mechanism must be one of ${CONNECTION_SASL_MECHANISMS.join(', ')}, not ${typeof mechanism === 'string' ? JSON.stringify(mechanism) : typeof mechanism}`,
            path: ['sasl', 'mechanism'],
            input: undefined,
          });
        }
      }
      if (tls !== undefined && (typeof tls !== 'object' || tls === null || Array.isArray(tls))) {
        context.addIssue({
          code: 'custom',
          message: "tls must be an object of Node's tls.connect options (ca, cert, key, passphrase, pfx, servername, rejectUnauthorized)",
          path: ['tls'],
          input: undefined,
        });
      }
    })
    .optional()
    .meta({
      description:
        "TLS (`tls`: Node's tls.connect options) and SASL (`sasl`: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER) options, passed unchanged to every connection. Default: the command's Kafka settings (--kafka-config, WEIR_KAFKA_*; see connectors.md, Secured clusters).",
      hint: "pass @platformatic/kafka's connection options, for example { tls: {...} } or { sasl: { mechanism: 'PLAIN', username, password } }",
      typeText: 'ConnectionOptions',
    } satisfies OptionMeta);
}
