import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection, ConnectionOptions, metadataV12 as MetadataV12 } from '@platformatic/kafka';
import { WeirError } from '../../core/errors/weir-error.ts';
import { processLog } from '../../core/logging/pino-logger.ts';
import { BrokerOutage } from './broker-outage.ts';
import { type BrokerAddress, formatBootstrap } from './kafka-connection-options.ts';
import { hasKafkaError, kafkaErrorIds } from './kafka-error-ids.ts';
import { ConnectionPool, metadataV12 } from './kafka-protocol.ts';

export interface PartitionInfo {
  partition: number;
  leaderId: number;
  leaderEpoch: number;
}

export interface TopicInfo {
  name: string;
  topicId: string;
  partitions: PartitionInfo[];
}

export interface ClusterConnectionsOptions extends ConnectionOptions {
  clientId?: string;
  /**
   * How long to keep trying to connect while brokers are unreachable (a broker restarting) before
   * failing; default 0: at once (preflight, tools). Tasks pass their connector's `retryTimeout`.
   */
  retryTimeoutMs?: number;
  /** Who connects, for the outage warnings: `the kafka sink "output"`. */
  owner?: string;
}

/**
 * Connections to a cluster's brokers, by node id, for the protocol-level parts of Weir (the
 * read_committed reader, the transaction driver). TLS and SASL options pass through to every
 * connection. While brokers are unreachable, connecting is retried with backoff for
 * `retryTimeoutMs`, and `outage` says so in the log.
 */
export class ClusterConnections {
  readonly bootstrap: readonly BrokerAddress[];
  /** Reports unreachable brokers and their return; retry loops over these connections report here too. */
  readonly outage: BrokerOutage;
  readonly retryTimeoutMs: number;
  readonly #pool: ConnectionPool;
  readonly #tls: ConnectionOptions['tls'];
  #brokers = new Map<number, BrokerAddress>();
  #closed = false;
  readonly #owner: string;

  constructor(bootstrap: readonly BrokerAddress[], options: ClusterConnectionsOptions = {}) {
    this.bootstrap = bootstrap;
    const { clientId = 'weir', retryTimeoutMs = 0, owner = `Kafka client ${clientId}`, ...connectionOptions } = options;
    this.#tls = options.tls;
    this.#owner = owner;
    this.retryTimeoutMs = retryTimeoutMs;
    this.outage = new BrokerOutage(owner, processLog);
    this.#pool = new ConnectionPool(clientId, { connectTimeout: 5_000, requestTimeout: 30_000, ...connectionOptions });
  }

  /** A connection to any reachable bootstrap broker. */
  async any(): Promise<Connection> {
    const deadline = Date.now() + this.retryTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      this.#ensureOpen();
      try {
        const connection = await this.#connectAny();
        this.outage.recovered();
        return connection;
      } catch (error) {
        if (!(error instanceof WeirError) || error.code !== 'BROKER_UNREACHABLE' || Date.now() >= deadline) throw error;
        this.outage.failed(formatBootstrap(this.bootstrap), describeNetworkError(error.cause), deadline);
        await sleep(Math.min(1000, 100 * 2 ** attempt, Math.max(0, deadline - Date.now())));
      }
    }
  }

  async #connectAny(): Promise<Connection> {
    try {
      return await this.#pool.getFirstAvailable([...this.bootstrap]);
    } catch (error) {
      const authentication = findNested(error, (entry) => (entry as { code?: string }).code === 'PLT_KFK_AUTHENTICATION');
      if (authentication !== undefined) {
        throw new WeirError(
          'KAFKA_AUTHENTICATION_FAILED',
          `authentication to Kafka at ${formatBootstrap(this.bootstrap)} failed: ${deepestMessage(authentication)}`,
          {
            hint: "check the SASL mechanism, user name and password: sasl.mechanism, sasl.username and WEIR_KAFKA_SASL_PASSWORD (or the --kafka-config file), or the connector's connection.sasl",
            fault: 'user',
            cause: error,
          },
        );
      }
      const tls = findNested(error, (entry) => TLS_ERROR.test(`${(entry as { code?: string }).code ?? ''} ${entry.message}`));
      if (tls !== undefined) {
        const code = (tls as { code?: string }).code;
        throw new WeirError(
          'KAFKA_TLS_FAILED',
          `the TLS handshake with Kafka at ${formatBootstrap(this.bootstrap)} failed: ${tls.message}${code && !tls.message.includes(code) ? ` (${code})` : ''}`,
          {
            hint: /CERT|SIGNATURE|ISSUER|SELF_SIGNED|ALTNAME/i.test(`${code} ${tls.message}`)
              ? "the broker's certificate is not trusted: set ssl.ca.location to the PEM file of the CA that signed it, and check that it names the host you connect to"
              : 'check security.protocol against the listener (SSL or SASL_SSL for a TLS listener), and for mutual TLS ssl.certificate.location and ssl.key.location',
            fault: 'user',
            cause: error,
          },
        );
      }
      throw new WeirError('BROKER_UNREACHABLE', `cannot reach Kafka at ${formatBootstrap(this.bootstrap)} (${describeNetworkError(error)})`, {
        hint: 'start a local broker with `weir kafka start`, or set KAFKA_BROKERS to a reachable cluster',
        fault: 'external',
        retriable: true,
        cause: error,
      });
    }
  }

  /** A connection to the broker with this node id (as the latest metadata named it). */
  async node(nodeId: number): Promise<Connection> {
    let broker = this.#brokers.get(nodeId);
    if (broker === undefined) {
      await this.metadata([]);
      broker = this.#brokers.get(nodeId);
    }
    if (broker === undefined) {
      throw new WeirError('UNKNOWN_BROKER', `the cluster has no broker with node id ${nodeId}`, { fault: 'external', retriable: true });
    }
    const deadline = Date.now() + this.retryTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      this.#ensureOpen();
      try {
        const connection = await this.#pool.get(broker);
        this.outage.recovered();
        return connection;
      } catch (error) {
        if (!isConnectFailure(error) || Date.now() >= deadline) throw error;
        this.outage.failed(`${broker.host}:${broker.port}`, describeNetworkError(error), deadline);
        await sleep(Math.min(1000, 100 * 2 ** attempt, Math.max(0, deadline - Date.now())));
      }
    }
  }

  /** Cluster metadata for these topics; null asks for every topic. */
  async metadata(topics: string[] | null): Promise<MetadataV12.MetadataResponse> {
    const connection = await this.any();
    const response = await metadataV12.api.async(connection, topics, false, false).catch((error: unknown) => {
      throw this.#closedConnection(error) ?? error;
    });
    this.#brokers = new Map(response.brokers.map((broker) => [broker.nodeId, { host: broker.host, port: broker.port }]));
    return response;
  }

  /**
   * Partitions and leaders of a topic; an unknown topic is an error naming it. A topic whose
   * partitions have no leader yet (LEADER_NOT_AVAILABLE: just created, or its broker moving) is
   * asked again with a back-off for up to {@link TOPIC_SETTLE_MS}, then named in a retriable error.
   */
  async topic(name: string): Promise<TopicInfo> {
    const deadline = Date.now() + TOPIC_SETTLE_MS;
    let response: MetadataV12.MetadataResponse | undefined;
    for (let attempt = 0; ; attempt++) {
      let settling: string | undefined;
      response = await this.metadata([name]).catch((error: unknown) => {
        if (hasKafkaError(error, 'UNKNOWN_TOPIC_OR_PARTITION', 'INVALID_TOPIC_EXCEPTION')) return undefined;
        const ids = kafkaErrorIds(error);
        if (ids.length > 0 && ids.every((id) => SETTLING.includes(id))) {
          settling = ids.join(', ');
          return undefined;
        }
        throw error;
      });
      if (settling === undefined) break;
      if (Date.now() >= deadline) {
        throw new WeirError('TOPIC_METADATA_FAILED', `metadata for topic "${name}" still answers ${settling} after ${TOPIC_SETTLE_MS / 1000} s`, {
          hint: "a topic's partitions need a live leader: check the brokers that host it",
          fault: 'external',
          retriable: true,
        });
      }
      await sleep(Math.min(1000, 100 * 2 ** attempt));
    }
    if (response === undefined) throw unknownTopic(name, this.bootstrap);
    const topic = response.topics.find((entry) => entry.name === name);
    if (topic === undefined || topic.errorCode === 3) throw unknownTopic(name, this.bootstrap);
    if (topic.errorCode !== 0) {
      throw new WeirError('TOPIC_METADATA_FAILED', `metadata for topic "${name}" failed with Kafka error code ${topic.errorCode}`, {
        fault: 'external',
        retriable: true,
      });
    }
    return {
      name,
      topicId: topic.topicId,
      partitions: topic.partitions
        .map((partition) => ({ partition: partition.partitionIndex, leaderId: partition.leaderId, leaderEpoch: partition.leaderEpoch }))
        .sort((a, b) => a.partition - b.partition),
    };
  }

  /**
   * A connection the broker closed under a request, as one clear error. A TLS listener that requires
   * client certificates (ssl.client.auth=required) accepts the TLS 1.3 handshake of a client without
   * one and closes the connection at its first request: say so when no certificate was given.
   */
  #closedConnection(error: unknown): WeirError | undefined {
    if ((error as { code?: string } | undefined)?.code !== 'PLT_KFK_NETWORK' || !(error instanceof Error)) return undefined;
    const withoutCertificate = this.#tls !== undefined && this.#tls.cert === undefined && this.#tls.pfx === undefined;
    return new WeirError('BROKER_UNREACHABLE', `Kafka at ${formatBootstrap(this.bootstrap)} closed the connection (${deepestMessage(error)})`, {
      hint: withoutCertificate
        ? 'a listener that requires client certificates (ssl.client.auth=required) closes connections without one: set ssl.certificate.location and ssl.key.location (or ssl.keystore.location); else check security.protocol against the listener'
        : 'check that the broker runs and that security.protocol matches its listener (SSL or SASL_SSL for a TLS listener)',
      fault: 'external',
      retriable: true,
      cause: error,
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#pool.close();
  }

  /** Closed connections fail at once, never retried: what used them has stopped (a task closed under a request in flight). */
  #ensureOpen(): void {
    if (this.#closed) {
      throw new WeirError('CONNECTIONS_CLOSED', `the Kafka connections of ${this.#owner} are closed`, { fault: 'internal' });
    }
  }
}

/** Node's and OpenSSL's TLS failures: certificate checks, handshake alerts, a TLS client on a plaintext port. */
const TLS_ERROR = /CERT_|_CERT|UNABLE_TO_(GET|VERIFY)|SELF_SIGNED|ERR_SSL|ERR_TLS|SSL routines|alert|wrong version number|certificate/i;

/** Whether connecting failed for a network reason (refused, reset, timed out), not a closed pool or bad credentials. */
function isConnectFailure(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  if (code !== 'PLT_KFK_NETWORK' && code !== 'PLT_KFK_TIMEOUT') return false;
  if (findNested(error, (entry) => (entry as { code?: string }).code === 'PLT_KFK_AUTHENTICATION') !== undefined) return false;
  return (error as { closed?: boolean }).closed !== true;
}

/** The most telling part of a connection failure: the system error code (ECONNREFUSED, ...) when there is one. */
export function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const nested = error instanceof AggregateError ? error.errors : [error];
  return nested
    .map((entry: unknown) => {
      if (!(entry instanceof Error)) return String(entry);
      const cause = entry.cause as (Error & { code?: string }) | undefined;
      return (entry as Error & { code?: string }).code?.startsWith('E')
        ? (entry as Error & { code: string }).code
        : (cause?.code ?? cause?.message ?? entry.message);
    })
    .join('; ');
}

function findNested(error: unknown, match: (entry: Error) => boolean, depth = 0): Error | undefined {
  if (!(error instanceof Error) || depth > 4) return undefined;
  if (match(error)) return error;
  for (const inner of error instanceof AggregateError ? error.errors : []) {
    const found = findNested(inner, match, depth + 1);
    if (found !== undefined) return found;
  }
  return findNested(error.cause, match, depth + 1);
}

function deepestMessage(error: Error): string {
  let current: unknown = error;
  let message = error.message;
  for (let depth = 0; current instanceof Error && depth < 5; depth++) {
    message = current.message || message;
    current = current.cause ?? (current instanceof AggregateError ? current.errors[0] : undefined);
  }
  return message;
}

/** How long a topic whose partitions have no leader yet is asked again. */
const TOPIC_SETTLE_MS = 10_000;
/** What a topic answers while its partitions get their leaders. */
const SETTLING = ['LEADER_NOT_AVAILABLE', 'NOT_LEADER_OR_FOLLOWER', 'REPLICA_NOT_AVAILABLE'];

function unknownTopic(name: string, bootstrap: readonly BrokerAddress[]): WeirError {
  return new WeirError('UNKNOWN_TOPIC', `topic "${name}" does not exist on ${formatBootstrap(bootstrap)}`, {
    hint: 'create it first (Weir does not create topics), or check the topic name',
  });
}
