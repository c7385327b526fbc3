/**
 * Protobuf and JSON Schema through a real Schema Registry: the job of
 * protobuf-json-registry-job.test.ts: registry-job-pipeline.ts (the output schema registered
 * beforehand: autoRegister off).
 * PJ_DIRECTION 'protobuf-to-json' (default) reads Protobuf and writes JSON Schema; 'json-to-protobuf'
 * reads JSON Schema (validated) and writes Protobuf. From the environment: PJ_REGISTRY, PJ_INPUT,
 * PJ_OUTPUT, PJ_DLQ, PJ_POLICY (fail, skip or dlq), KAFKA_BROKERS.
 */
import { defineJob } from '../../../src/api/define-job.ts';
import { jsonSchemaDeserializer } from '../../../src/connectors/schema-registry/json-schema-deserializer.ts';
import { jsonSchemaSerializer } from '../../../src/connectors/schema-registry/json-schema-serializer.ts';
import { protobufDeserializer } from '../../../src/connectors/schema-registry/protobuf-deserializer.ts';
import { protobufSerializer } from '../../../src/connectors/schema-registry/protobuf-serializer.ts';
import { schemaRegistry } from '../../../src/connectors/schema-registry/schema-registry-client.ts';
import { registryPipeline, type Total } from './registry-job-pipeline.ts';

export type { Total };

/** What both input formats decode to (Protobuf's int64 as a decimal string, JSON's as a number). */
export interface Order {
  id: string | number;
  amount: number;
  currency: string;
}
export const orderProto = `syntax = "proto3";
package dev.weir.test;
message Order {
  int64 id = 1;
  double amount = 2;
  string currency = 3;
}
`;
export const totalProto = `syntax = "proto3";
package dev.weir.test;
message Total {
  int64 id = 1;
  int64 cents = 2;
  string label = 3;
}
`;
export const orderJsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Order',
  type: 'object',
  properties: { id: { type: 'integer' }, amount: { type: 'number' }, currency: { type: 'string', enum: ['EUR', 'USD'] } },
  required: ['id', 'amount', 'currency'],
};
// draft-07: Apicurio 2.4's compatibility check (everit) answers 500 "could not determine version" to a 2020-12 schema.
export const totalJsonSchema = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'Total',
  type: 'object',
  properties: { id: { type: 'integer' }, cents: { type: 'integer' }, label: { type: 'string' } },
  required: ['id', 'cents', 'label'],
  additionalProperties: false,
};

export default defineJob({
  name: 'protobuf-json-registry',
  build(env) {
    const registry = schemaRegistry({ url: process.env.PJ_REGISTRY as string, retryTimeout: 1000 });
    const fromProtobuf = process.env.PJ_DIRECTION !== 'json-to-protobuf';
    const output = process.env.PJ_OUTPUT as string;
    registryPipeline(env, {
      input: process.env.PJ_INPUT as string,
      output,
      dlq: process.env.PJ_DLQ,
      policy: process.env.PJ_POLICY,
      orders: fromProtobuf ? protobufDeserializer<Order>({ registry }) : jsonSchemaDeserializer<Order>({ registry, validate: true }),
      totals: fromProtobuf
        ? jsonSchemaSerializer<Total>({ registry, schema: totalJsonSchema, topic: output })
        : protobufSerializer<Total>({ registry, schema: totalProto, topic: output }),
      total: (order: Order): Total => ({ id: Number(order.id), cents: Math.round(order.amount * 100), label: `${order.currency}-${order.id}` }),
    });
  },
});
