import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as weir from '../../src/index.ts';

test("the package entry exports what a job needs: import { defineJob, kafkaSource, kafkaSink, ... } from 'weir-streams'", () => {
  for (const name of [
    'defineJob',
    'kafkaSource',
    'kafkaSink',
    'kafkaDeserializers',
    'fileSink',
    'dataGenSource',
    'valueState',
    'runJob',
    'WeirError',
    'twoPhaseCommitSink',
    'WatermarkStrategy',
    'TumblingEventTimeWindows',
    'SlidingEventTimeWindows',
    'EventTimeSessionWindows',
    'TumblingProcessingTimeWindows',
    'CountTrigger',
    'ContinuousEventTimeTrigger',
    'OutputTag',
    'TimeWindow',
  ]) {
    assert.equal(typeof (weir as Record<string, unknown>)[name] === 'function' || typeof (weir as Record<string, unknown>)[name] === 'object', true, name);
  }
  const job = weir.defineJob({ name: 'example', build() {} });
  assert.equal(job.name, 'example');
});
