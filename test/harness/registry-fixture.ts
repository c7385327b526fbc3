/**
 * What the registry format tests share: a real registry (Apicurio, test/harness/schema-registry.ts)
 * started before a suite's tests with one schema registered under "orders-value", stopped after;
 * Kafka records around bytes; wire-format messages laid out by hand.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { TopicRecord } from '../../src/connectors/kafka/topic-record.ts';
import type { RegisteredSchema } from '../../src/connectors/schema-registry/schema-registry-client.ts';
import { type SchemaRegistryServer, startSchemaRegistry } from './schema-registry.ts';

export interface RegistryFixture {
  /** The registry, once the suite's before hook ran. */
  readonly server: SchemaRegistryServer;
  /** The id of the schema registered under "orders-value". */
  readonly id: number;
}

/** Call inside a `describe`: its before hook starts a registry and registers `schema` under "orders-value", its after hook stops the registry. */
export function registryWithSchema(schemaType: RegisteredSchema['schemaType'], schema: string): RegistryFixture {
  const fixture = {} as { server: SchemaRegistryServer; id: number };
  before(async () => {
    fixture.server = await startSchemaRegistry();
    const registered = await fixture.server.request<{ id: number }>('POST', '/subjects/orders-value/versions', { schemaType, schema });
    assert.equal(registered.status, 200, JSON.stringify(registered.body));
    fixture.id = registered.body.id;
  });
  after(async () => {
    await fixture.server?.stop();
  });
  return fixture;
}

/** A record of topic "t", partition 0, holding `value` (no key). */
export function topicRecord(value: Buffer | null, offset = 0n): TopicRecord {
  return { topic: 't', partition: 0, offset, timestamp: 0n, key: null, value, headers: [], producerId: -1n };
}

/** A wire-format message: the magic byte 0, `id` as 4 bytes big-endian, then each part (bytes, a string as UTF-8). */
export function wireMessage(id: number, ...parts: ReadonlyArray<Buffer | string | readonly number[]>): Buffer {
  const head = Buffer.alloc(5);
  head.writeInt32BE(id, 1);
  return Buffer.concat([head, ...parts.map((part) => (Buffer.isBuffer(part) ? part : typeof part === 'string' ? Buffer.from(part) : Buffer.from(part)))]);
}
