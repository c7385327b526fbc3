/**
 * The pipeline of the registry jobs (avro-registry-job.ts, protobuf-json-registry-job.ts): a
 * bounded Kafka source reading Orders through a registry deserializer, a map turning each into a
 * Total, an exactly-once Kafka sink writing Totals through a registry serializer; source and sink
 * wrapped in withSchemaRegistry, so the preflight checks the registry and the output subject.
 */
import type { StreamExecutionEnvironment } from '../../../src/api/stream-execution-environment.ts';
import { kafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import { kafkaSource } from '../../../src/connectors/kafka/kafka-source.ts';
import type { RegistryDeserializer } from '../../../src/connectors/schema-registry/registry-deserializer.ts';
import type { RegistrySerializer } from '../../../src/connectors/schema-registry/registry-serializer.ts';
import { withSchemaRegistry } from '../../../src/connectors/schema-registry/with-schema-registry.ts';
import type { JobClient } from '../../../src/runtime/jobmaster/job-master.ts';

export interface Total {
  id: number;
  cents: number;
  label: string;
}

export interface RegistryPipeline<O> {
  input: string;
  output: string;
  /** The dead letter topic under policy 'dlq'. */
  dlq: string | undefined;
  /** The source's onDeserializationError: 'fail' (default), 'skip' or 'dlq'. */
  policy: string | undefined;
  orders: RegistryDeserializer<O>;
  totals: RegistrySerializer<Total>;
  total(order: O): Total;
}

export function registryPipeline<O>(env: StreamExecutionEnvironment, job: RegistryPipeline<O>): void {
  const { policy, orders, totals } = job;
  env
    .fromSource(
      withSchemaRegistry(
        kafkaSource<O>({
          topics: [job.input],
          bounded: true,
          deserializer: orders,
          onDeserializationError: policy === 'dlq' ? { deadLetter: { topic: job.dlq as string } } : policy === 'skip' ? 'skip' : 'fail',
          partitionDiscoveryInterval: 0,
        }),
        orders,
      ),
      { uid: 'input' },
    )
    .map(job.total, { name: 'total', uid: 'total' })
    .sinkTo(
      withSchemaRegistry(
        kafkaSink<Total>({
          topic: job.output,
          serializer: (total) => ({ key: String(total.id), value: totals(total) }),
          deliveryGuarantee: 'exactly-once',
          transactionalIdPrefix: `weir-${job.output}`,
        }),
        totals,
      ),
      { uid: 'output' },
    );
}

/** How many bad records the pipeline's source skipped (its 'input.recordsSkipped' metric), as the job's status says. */
export function recordsSkipped(client: JobClient): unknown {
  return client
    .status()
    .vertices.flatMap((vertex) => Object.entries(vertex.operators))
    .find(([key]) => key === 'input.recordsSkipped')?.[1];
}
