import { setTimeout as sleep } from 'node:timers/promises';
import type { ConnectionOptions } from '@platformatic/kafka';
import { z } from 'zod';
import type { ClusterConnections, TopicInfo } from '../connectors/kafka/cluster-connections.ts';
import type { BrokerAddress } from '../connectors/kafka/kafka-connection-options.ts';
import { fetchedRecords, fetchPartitions } from '../connectors/kafka/partition-fetcher.ts';
import { PlainProducer } from '../connectors/kafka/plain-producer.ts';
import type { TopicRecord } from '../connectors/kafka/topic-record.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { ensureClusterTopics } from './cluster-topics.ts';
import { clusterTopicName } from './stage-plan.ts';
import { decodeVersionedJson } from './versioned-json.ts';

/**
 * A cluster's control topic (one partition): how `weir savepoint --cluster` and `weir stop
 * --cluster` reach every member with no manager of Weir's own. The command appends a request
 * (savepoint S, its folder, whether the cluster stops with it); every member reads the topic, and
 * its source tasks take their part of S at their next checkpoint (their barrier frames carry S on
 * through the exchanges). The command appends `done` once every task's part is committed and the
 * savepoint's `_metadata` is written (after a stop, the members then leave), or `aborted` when it
 * gives up: a request without either is the one under way.
 */
export const CONTROL_VERSION = 1;

const controlSchema = z.object({
  version: z.literal(CONTROL_VERSION),
  kind: z.enum(['request', 'done', 'aborted']),
  id: z.number().int().positive(),
  target: z.string().optional(),
  stop: z.enum(['suspend', 'drain']).optional(),
  at: z.number(),
});

export type ControlRecord = z.infer<typeof controlSchema>;

/** A savepoint request under way. */
export interface SavepointRequest {
  id: number;
  target: string;
  stop: 'suspend' | 'drain' | undefined;
}

export const controlTopicName = (cluster: string) => clusterTopicName(cluster, 'control');

/** Creates the control topic when missing (whichever comes first: a member or the command). */
export async function ensureControlTopic(
  connections: ClusterConnections,
  bootstrap: readonly BrokerAddress[],
  connection: ConnectionOptions,
  cluster: string,
): Promise<void> {
  await ensureClusterTopics(connections, bootstrap, connection, [
    { topic: controlTopicName(cluster), partitions: 1, compacted: false, what: 'the control topic' },
  ]);
}

export async function appendControl(connections: ClusterConnections, cluster: string, record: Omit<ControlRecord, 'version' | 'at'>): Promise<void> {
  const value = Buffer.from(JSON.stringify({ version: CONTROL_VERSION, ...record, at: Date.now() } satisfies ControlRecord));
  await new PlainProducer(connections).send([{ topic: controlTopicName(cluster), partition: 0, key: Buffer.from(record.kind), value }], -1);
}

export function decodeControl(record: TopicRecord): ControlRecord {
  return decodeVersionedJson(
    controlSchema,
    record.value ?? Buffer.alloc(0),
    CONTROL_VERSION,
    (problem) =>
      new WeirError(
        'CLUSTER_PROTOCOL_MISMATCH',
        `the control record at ${record.topic}/${record.partition} offset ${record.offset} does not read (${problem.kind})`,
        {
          hint: 'run every member and command of a cluster with the same Weir version',
          fault: 'external',
        },
      ),
  );
}

/** What the control records say so far. */
export class ControlState {
  readonly #requests = new Map<number, ControlRecord>();
  readonly #ended = new Map<number, 'done' | 'aborted'>();
  /** The newest savepoint id any record names. */
  latestId = 0;
  /** The offset of the latest `done` record. */
  doneOffset = -1n;

  add(record: ControlRecord, offset: bigint): void {
    this.latestId = Math.max(this.latestId, record.id);
    if (record.kind === 'request') this.#requests.set(record.id, record);
    else this.#ended.set(record.id, record.kind);
    if (record.kind === 'done' && offset > this.doneOffset) this.doneOffset = offset;
  }

  /** Savepoint `id` was given up: aborted, or a newer one was asked for. */
  gaveUp(id: number): boolean {
    return id < this.latestId || this.#ended.get(id) === 'aborted';
  }

  /** The newest request, while neither done nor aborted (older ones are given up by it). */
  get active(): SavepointRequest | undefined {
    const newest = this.#requests.get(this.latestId);
    if (newest === undefined || this.#ended.has(newest.id) || newest.target === undefined) return undefined;
    return { id: newest.id, target: newest.target, stop: newest.stop };
  }

  /** The newest request stopped the cluster and is done: its members leave. */
  get stopped(): number | undefined {
    const newest = this.#requests.get(this.latestId);
    return newest?.stop !== undefined && this.#ended.get(newest.id) === 'done' ? newest.id : undefined;
  }
}

/**
 * A member's reader of the control topic: reads it from its start, then polls it (every 500 ms).
 * `stopped` resolves when a stopping savepoint is done: the member leaves. A topic that does not
 * read (yet) is tried again; nothing else of the member waits for it.
 */
export class ControlReader {
  readonly state = new ControlState();
  readonly #connections: ClusterConnections;
  readonly #topic: string;
  readonly #stopped = Promise.withResolvers<number>();
  #offset = 0n;
  /** The topic's end when this member first read it: a stop done before is history (the cluster was started again since). */
  #history: bigint | undefined;
  #closed = false;
  readonly #loop: Promise<void>;

  constructor(connections: ClusterConnections, cluster: string, log: (line: string) => void) {
    this.#connections = connections;
    this.#topic = controlTopicName(cluster);
    this.#loop = this.#run(log);
  }

  get active(): SavepointRequest | undefined {
    return this.state.active;
  }

  gaveUp(id: number): boolean {
    return this.state.gaveUp(id);
  }

  get stopped(): Promise<number> {
    return this.#stopped.promise;
  }

  /**
   * Whether a task restored from its part of stopping savepoint `id` stays halted: the stop is under
   * way, or done since this member started (a member that leaves first hands its halted tasks to the
   * others, which must not run them on past the savepoint). A stop done before is history.
   */
  halts(id: number): boolean {
    if (this.#history === undefined) return false;
    const active = this.state.active;
    if (active?.id === id && active.stop !== undefined) return true;
    return this.state.stopped === id && this.state.doneOffset >= this.#history;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#loop;
  }

  async #run(log: (line: string) => void): Promise<void> {
    let info: TopicInfo | undefined;
    let announced: number | undefined;
    while (!this.#closed) {
      try {
        info ??= await this.#connections.topic(this.#topic);
        const [result] = await fetchPartitions(
          this.#connections,
          new Map([[this.#topic, info]]),
          [{ topic: this.#topic, partition: 0, offset: this.#offset }],
          {
            isolation: 'read_uncommitted',
            maxWaitMs: 100,
          },
        );
        if (result !== undefined) {
          this.#history ??= result.highWatermark;
          for (const record of fetchedRecords(result)) if (record.offset >= this.#offset) this.state.add(decodeControl(record), record.offset);
          if (result.nextOffset > this.#offset) this.#offset = result.nextOffset;
        }
        const active = this.state.active;
        if (active !== undefined && active.id !== announced) {
          announced = active.id;
          log(
            `savepoint ${active.id} requested (${active.stop === undefined ? 'the cluster goes on' : `the cluster stops${active.stop === 'drain' ? ', drained' : ''}`}): ${active.target}`,
          );
        }
        const stopped = this.state.stopped;
        if (stopped !== undefined && this.#history !== undefined && this.state.doneOffset >= this.#history) this.#stopped.resolve(stopped);
      } catch {
        info = undefined; // not there yet, or its leader moved: asked again
      }
      await sleep(500);
    }
  }
}
