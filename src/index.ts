/**
 * Weir's public API: `import { defineJob, kafkaSource, kafkaSink } from 'weir-streams'`.
 * A job is a module whose default export is `defineJob(...)`; run it with `weir run <module>`.
 */

export { AsyncDataStream, type AsyncWaitOptions } from './api/async-data-stream.ts';
export type {
  BroadcastConnectedStream,
  BroadcastStream,
  CoGroupedStreams,
  CoGroupedWindow,
  CoGroupFunction,
  ConnectedStreams,
  DataStream,
  IntervalJoin,
  IntervalJoined,
  JoinedStreams,
  JoinedWindow,
  JoinFunction,
  KeyedBroadcastConnectedStream,
  KeyedConnectedStreams,
  KeyedStream,
  OperatorOptions,
  ProcessingOptions,
  SingleOutputStreamOperator,
  WindowedStream,
} from './api/data-stream.ts';
export { DataStreamUtils } from './api/data-stream-utils.ts';
export { defineJob, type JobDefinition } from './api/define-job.ts';
export type { SourceOptions, StreamExecutionEnvironment } from './api/stream-execution-environment.ts';
export { ContinuousEventTimeTrigger } from './api/windowing/continuous-event-time-trigger.ts';
export { ContinuousProcessingTimeTrigger } from './api/windowing/continuous-processing-time-trigger.ts';
export { CountTrigger } from './api/windowing/count-trigger.ts';
export { EventTimeTrigger } from './api/windowing/event-time-trigger.ts';
export { GlobalWindows } from './api/windowing/global-windows.ts';
export { ProcessingTimeTrigger } from './api/windowing/processing-time-trigger.ts';
export { PurgingTrigger } from './api/windowing/purging-trigger.ts';
export { EventTimeSessionWindows, ProcessingTimeSessionWindows, type SessionGapExtractor } from './api/windowing/session-windows.ts';
export { SlidingEventTimeWindows, SlidingProcessingTimeWindows } from './api/windowing/sliding-windows.ts';
export { TumblingEventTimeWindows, TumblingProcessingTimeWindows } from './api/windowing/tumbling-windows.ts';
export { type DataGenOptions, type DataGenRecord, dataGenSource } from './connectors/datagen/datagen-source.ts';
export { discardingSink } from './connectors/discarding-sink.ts';
export { type FileSinkOptions, fileSink } from './connectors/file/file-sink.ts';
export type { DeadLetterTopic, OnRecordError } from './connectors/kafka/dead-letter-sink.ts';
export { kafkaDeserializers } from './connectors/kafka/kafka-deserializers.ts';
export { type KafkaSettings, type KafkaSettingsOptions, loadKafkaSettings } from './connectors/kafka/kafka-settings.ts';
export { kafkaSink } from './connectors/kafka/kafka-sink.ts';
export type { KafkaProducerRecord, KafkaSinkOptions } from './connectors/kafka/kafka-sink-options.ts';
export { kafkaSource } from './connectors/kafka/kafka-source.ts';
export type { KafkaSourceOptions, OffsetOutOfRangePolicy, StartingOffsets } from './connectors/kafka/kafka-source-options.ts';
export { keyGroupOf, keyGroupPartitioner } from './connectors/kafka/key-group-partitioner.ts';
export type { TopicRecord } from './connectors/kafka/partition-fetcher.ts';
export { type ReadTopicOptions, readTopic } from './connectors/kafka/topic-reader.ts';
export { postgresSink } from './connectors/postgres/postgres-sink.ts';
export type { PostgresRow, PostgresSinkOptions } from './connectors/postgres/postgres-sink-options.ts';
export type { PostgresChangeRecord, PostgresSourceRow, PostgresSourceSplit } from './connectors/postgres-source/postgres-change-record.ts';
export { postgresSource } from './connectors/postgres-source/postgres-source.ts';
export type { PostgresSourceOptions } from './connectors/postgres-source/postgres-source-options.ts';
export { type AvroDeserializer, type AvroDeserializerOptions, avroDeserializer } from './connectors/schema-registry/avro-deserializer.ts';
export type { AvroSchema } from './connectors/schema-registry/avro-schema.ts';
export { type AvroSerializer, type AvroSerializerOptions, avroSerializer } from './connectors/schema-registry/avro-serializer.ts';
export type { JsonSchema } from './connectors/schema-registry/json-schema.ts';
export {
  type JsonSchemaDeserializer,
  type JsonSchemaDeserializerOptions,
  jsonSchemaDeserializer,
} from './connectors/schema-registry/json-schema-deserializer.ts';
export { type JsonSchemaSerializer, type JsonSchemaSerializerOptions, jsonSchemaSerializer } from './connectors/schema-registry/json-schema-serializer.ts';
export { type ProtobufDeserializer, type ProtobufDeserializerOptions, protobufDeserializer } from './connectors/schema-registry/protobuf-deserializer.ts';
export { type ProtobufSerializer, type ProtobufSerializerOptions, protobufSerializer } from './connectors/schema-registry/protobuf-serializer.ts';
export type { RegistryDeserializer } from './connectors/schema-registry/registry-deserializer.ts';
export type { RegistrySerializer, RegistrySerializerOptions } from './connectors/schema-registry/registry-serializer.ts';
export { type RegisteredSchema, type SchemaReference, SchemaRegistryClient, schemaRegistry } from './connectors/schema-registry/schema-registry-client.ts';
export type { SchemaRegistrySettings } from './connectors/schema-registry/schema-registry-settings.ts';
export type { SubjectNameStrategy } from './connectors/schema-registry/subject-name.ts';
export { withSchemaRegistry } from './connectors/schema-registry/with-schema-registry.ts';
export { dataLoss, type TwoPhaseCommitLogic, twoPhaseCommitSink } from './connectors/two-phase-commit-sink.ts';
export type { EnvironmentConfigInput as JobConfig } from './core/config/environment-config.ts';
export type { DeliveryGuarantee, Sink } from './core/connector/sink.ts';
export type { Source, SourceBatch, SourceReader, SourceReaderContext } from './core/connector/source.ts';
export { WeirError } from './core/errors/weir-error.ts';
export { type TimestampAssigner, type WatermarkGenerator, type WatermarkOutput, WatermarkStrategy } from './core/event-time/watermark-strategy.ts';
export type { AsyncFunction, AsyncInvoke, AsyncInvokeContext, AsyncRetryStrategy, RichAsyncFunction } from './core/functions/async-function.ts';
export type {
  BroadcastContext,
  BroadcastProcessFunction,
  BroadcastState,
  KeyedBroadcastContext,
  KeyedBroadcastProcessFunction,
  ReadOnlyBroadcastAccess,
  ReadOnlyBroadcastState,
} from './core/functions/broadcast-process-functions.ts';
export type { DeadLetterRecord } from './core/functions/dead-letter.ts';
export { OutputTag } from './core/functions/output-tag.ts';
export type {
  Collector,
  CoProcessFunction,
  KeyedContext,
  KeyedCoProcessFunction,
  KeyedProcessFunction,
  OnTimerContext,
  ProcessContext,
  ProcessFunction,
  ProcessJoinContext,
  ProcessJoinFunction,
  RuntimeContext,
  TimerService,
} from './core/functions/process-functions.ts';
export type { LogFields, Logger, LogLevel } from './core/logging/logger.ts';
export type { MetricCounter, MetricHistogram, MetricMeter, UserMetricGroup } from './core/metrics/metric-group.ts';
export { aggregatingState, listState, mapState, reducingState, valueState } from './core/state/state-descriptors.ts';
export { enableTimeToLive, type StateTtlConfig } from './core/state/state-ttl-config.ts';
export type { AggregatingState, ListState, MapState, ReducingState, ValueState } from './core/state/state-types.ts';
export type { OnMergeContext, Trigger, TriggerContext, TriggerResult, WindowValueState } from './core/windowing/trigger.ts';
export { GlobalWindow, TimeWindow, type Window } from './core/windowing/window.ts';
export type { WindowAssigner, WindowAssignerContext } from './core/windowing/window-assigner.ts';
export type { AggregateFunction, ProcessWindowContext, ProcessWindowFunction, ReduceFunction } from './core/windowing/window-functions.ts';
export type { Job } from './graph/job.ts';
export { type JobClient, type JobResult, type RunJobOptions, runJob, startJob } from './runtime/jobmaster/job-master.ts';
