import { WeirError } from '../../core/errors/weir-error.ts';

/**
 * How a serializer names the subject its schema is registered under (Confluent's
 * subject.name.strategy): 'topic' `<topic>-value` / `<topic>-key` (the default), 'record' the
 * record's full name, 'topic-record' `<topic>-<full name>`.
 */
export type SubjectNameStrategy = 'topic' | 'record' | 'topic-record';

export function subjectName(strategy: SubjectNameStrategy, parts: { topic: string | undefined; isKey: boolean; recordName: string | undefined }): string {
  if (strategy !== 'topic' && strategy !== 'record' && strategy !== 'topic-record')
    throw new WeirError('INVALID_SINK', `subjectStrategy ${JSON.stringify(strategy)} is not a subject name strategy`, {
      hint: "use 'topic' (the default), 'record' or 'topic-record'",
    });
  if (strategy !== 'record' && (parts.topic === undefined || parts.topic === ''))
    throw new WeirError('INVALID_SINK', `subjectStrategy '${strategy}' names the subject after the topic, and no topic is given`, {
      hint: "pass the serializer's topic (the sink's topic), or use subjectStrategy 'record'",
    });
  if (strategy !== 'topic' && parts.recordName === undefined)
    throw new WeirError('INVALID_SINK', `subjectStrategy '${strategy}' names the subject after the record, and the schema is not a named record`, {
      hint: "give a record schema with a name (and namespace), or use subjectStrategy 'topic'",
    });
  if (strategy === 'topic') return `${parts.topic}-${parts.isKey ? 'key' : 'value'}`;
  if (strategy === 'record') return parts.recordName as string;
  return `${parts.topic}-${parts.recordName}`;
}
