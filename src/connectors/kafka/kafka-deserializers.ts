import type { TopicRecord } from './partition-fetcher.ts';

/** Ready-made deserializers for `kafkaSource({ deserializer })`: the record's value as UTF-8 text, parsed JSON, or bytes. */
export const kafkaDeserializers = {
  string: (record: TopicRecord): string | null => record.value?.toString('utf8') ?? null,
  json: <T>(record: TopicRecord): T => JSON.parse(record.value?.toString('utf8') ?? 'null') as T,
  bytes: (record: TopicRecord): Buffer | null => record.value,
};
