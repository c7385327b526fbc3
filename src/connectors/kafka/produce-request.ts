import type { produceV11 as ProduceV11 } from '@platformatic/kafka';
import { createAPI, produceV11, Writer } from './kafka-protocol.ts';
import type { EncodedBatch } from './record-batch-builder.ts';

/**
 * Produce (v11) of record batches already encoded (RecordAccumulator, one buffer per partition).
 * The client's own encoder builds a buffer chunk per field of every record and concatenates them
 * twice, for the CRC and for the socket; this is the sink's hot path. The envelope and the answer
 * are the client's (`produceV11`).
 */
export const produceRequest = createAPI<
  [acks: number, timeoutMs: number, batches: readonly EncodedBatch[], transactionalId: string | undefined],
  ProduceV11.ProduceResponse
>(0, 11, encodeProduceRequest, produceV11.parseResponse, true, true);

/** The body of a produce request (v11): the batches grouped by topic, in their order. */
export function encodeProduceRequest(acks: number, timeoutMs: number, batches: readonly EncodedBatch[], transactionalId: string | undefined): Writer {
  const topics = new Map<string, EncodedBatch[]>();
  for (const batch of batches) {
    const known = topics.get(batch.topic);
    if (known === undefined) topics.set(batch.topic, [batch]);
    else known.push(batch);
  }
  const writer = Writer.create().appendString(transactionalId).appendInt16(acks).appendInt32(timeoutMs);
  writer.appendUnsignedVarInt(topics.size + 1);
  for (const [topic, group] of topics) {
    writer.appendString(topic).appendUnsignedVarInt(group.length + 1);
    for (const batch of group) {
      writer
        .appendInt32(batch.partition)
        .appendUnsignedVarInt(batch.bytes.length + 1)
        .append(batch.bytes)
        .appendTaggedFields();
    }
    writer.appendTaggedFields();
  }
  return writer.appendTaggedFields();
}
