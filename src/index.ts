/**
 * Weir's public API: `import { defineJob, kafkaSource, kafkaSink } from 'weir'`.
 * A job is a module whose default export is `defineJob(...)`; run it with `weir run <module>`.
 */

export type { DataStream, KeyedStream, OperatorOptions } from './api/data-stream.ts';
export { defineJob, type Job, type JobDefinition } from './api/define-job.ts';
export type { EnvironmentConfigInput as JobConfig } from './api/environment-config.ts';
export type { Collector, KeyedContext, KeyedProcessFunction, RuntimeContext, TimerService } from './api/functions.ts';
export type { StreamExecutionEnvironment } from './api/stream-execution-environment.ts';
export { type DataGenOptions, type DataGenRecord, dataGenSource } from './connectors/datagen/datagen-source.ts';
export { discardingSink } from './connectors/discarding-sink.ts';
export { type FileSinkOptions, fileSink } from './connectors/file/file-sink.ts';
export { type KafkaProducerRecord, type KafkaSinkOptions, kafkaSink } from './connectors/kafka/kafka-sink.ts';
export { type KafkaSourceOptions, kafkaDeserializers, kafkaSource, type StartingOffsets } from './connectors/kafka/kafka-source.ts';
export type { TopicRecord } from './connectors/kafka/partition-fetcher.ts';
export { readTopic } from './connectors/kafka/topic-reader.ts';
export type { DeliveryGuarantee, Sink } from './connectors/sink.ts';
export type { Source, SourceReader } from './connectors/source.ts';
export { dataLoss, type TwoPhaseCommitLogic, twoPhaseCommitSink } from './connectors/two-phase-commit-sink.ts';
export { WeirError } from './errors.ts';
export { type JobClient, type JobResult, type RunJobOptions, runJob, startJob } from './runtime/job-master.ts';
export { aggregatingState, listState, mapState, reducingState, valueState } from './state/state-descriptors.ts';
export type { AggregatingState, ListState, MapState, ReducingState, ValueState } from './state/state-types.ts';
