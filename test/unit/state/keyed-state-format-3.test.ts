import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listState, mapState, valueState } from '../../../src/core/state/state-descriptors.ts';
import type { StateKey } from '../../../src/core/state/state-key.ts';
import { enableTimeToLive } from '../../../src/core/state/state-ttl-config.ts';
import { HeapKeyedStateBackend } from '../../../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../../../src/state/key-group-range.ts';

// Written by the Weir before asynchronous snapshots (format 3, maxParallelism 8): keys k0..k19 with value
// { n: i }, list [a<i>, b<i>], map { x: i, y: -i }, TTL value i * 10 (written at 1000, ttl 1 h), an
// event-time timer at 5000 + i and a processing-time timer at 7000 + i in namespace w<i>.
const FORMAT_3_SNAPSHOT = [
  'V0tTQgMACAAAAAAAAAAHAAAABAAAAAEFAAAAdmFsdWUCBAAAAGxpc3QDAwAAAG1hcIEDAAAAdHRsCAAAAAAAAADBAAAAIAEAAAnypycBAAAA4QEAAH8BAACv',
  'EGuMAgAAAGADAAB+AQAAbz8+YQMAAADeBAAA0gEAAI5UhasEAAAAsAYAACEBAABjGs4yBQAAANEHAADMAAAAWmo8cQYAAACdCAAAdAEAABQirxEHAAAAEQoA',
  'AB4BAADPE1PhnF0huwQAAAAAAAAAAgAAACAAAAD/D0EEIgJrM28iAW5JBnsBIgNrMThvIgFuSSR7ASQABAEAAAACAAAALAAAAP8PQQQiAmszQQIiAmEzIgJi',
  'MyQAAiIDazE4QQIiA2ExOCIDYjE4JAACJAAEAgAAAAIAAAAqAAAA/w9BBCICazM7IgF4SQYiAXlJBToEIgNrMTg7IgF4SSQiAXlJIzoEJAAEAwAAAAIAAAAt',
  'AAAA/w9BBCICazNvIgF2STwiAXRJ0A97AiIDazE4byIBdknoAiIBdEnQD3sCJAAEAgAAAB8AAAD/D0EGIgJrM0m2bSICdzMiA2sxOEnUbSIDdzE4JAAGAgAA',
  'ABoAAAD/D0EGIgJrM0mWTiIAIgNrMThJtE4iACQABgQAAAAAAAAAAwAAAC0AAAD/D0EGIgJrOW8iAW5JEnsBIgNrMTdvIgFuSSJ7ASIDazE5byIBbkkmewEk',
  'AAYBAAAAAwAAAEAAAAD/D0EGIgJrOUECIgJhOSICYjkkAAIiA2sxN0ECIgNhMTciA2IxNyQAAiIDazE5QQIiA2ExOSIDYjE5JAACJAAGAgAAAAMAAAA8AAAA',
  '/w9BBiICazk7IgF4SRIiAXlJEToEIgNrMTc7IgF4SSIiAXlJIToEIgNrMTk7IgF4SSYiAXlJJToEJAAGAwAAAAMAAABCAAAA/w9BBiICazlvIgF2SbQBIgF0',
  'SdAPewIiA2sxN28iAXZJ1AIiAXRJ0A97AiIDazE5byIBdkn8AiIBdEnQD3sCJAAGAwAAACwAAAD/D0EJIgJrOUnCbSICdzkiA2sxN0nSbSIDdzE3IgNrMTlJ',
  '1m0iA3cxOSQACQMAAAAkAAAA/w9BCSICazlJok4iACIDazE3SbJOIgAiA2sxOUm2TiIAJAAJBAAAAAAAAAADAAAALQAAAP8PQQYiAmsxbyIBbkkCewEiA2sx',
  'NW8iAW5JHnsBIgNrMTZvIgFuSSB7ASQABgEAAAADAAAAQAAAAP8PQQYiAmsxQQIiAmExIgJiMSQAAiIDazE1QQIiA2ExNSIDYjE1JAACIgNrMTZBAiIDYTE2',
  'IgNiMTYkAAIkAAYCAAAAAwAAADwAAAD/D0EGIgJrMTsiAXhJAiIBeUkBOgQiA2sxNTsiAXhJHiIBeUkdOgQiA2sxNjsiAXhJICIBeUkfOgQkAAYDAAAAAwAA',
  'AEEAAAD/D0EGIgJrMW8iAXZJFCIBdEnQD3sCIgNrMTVvIgF2SawCIgF0SdAPewIiA2sxNm8iAXZJwAIiAXRJ0A97AiQABgMAAAAsAAAA/w9BCSICazFJsm0i',
  'AncxIgNrMTVJzm0iA3cxNSIDazE2SdBtIgN3MTYkAAkDAAAAJAAAAP8PQQkiAmsxSZJOIgAiA2sxNUmuTiIAIgNrMTZJsE4iACQACQQAAAAAAAAABAAAADkA',
  'AAD/D0EIIgJrNW8iAW5JCnsBIgJrNm8iAW5JDHsBIgNrMTBvIgFuSRR7ASIDazEzbyIBbkkaewEkAAgBAAAABAAAAFEAAAD/D0EIIgJrNUECIgJhNSICYjUk',
  'AAIiAms2QQIiAmE2IgJiNiQAAiIDazEwQQIiA2ExMCIDYjEwJAACIgNrMTNBAiIDYTEzIgNiMTMkAAIkAAgCAAAABAAAAE0AAAD/D0EIIgJrNTsiAXhJCiIB',
  'eUkJOgQiAms2OyIBeEkMIgF5SQs6BCIDazEwOyIBeEkUIgF5SRM6BCIDazEzOyIBeEkaIgF5SRk6BCQACAMAAAAEAAAAUwAAAP8PQQgiAms1byIBdklkIgF0',
  'SdAPewIiAms2byIBdkl4IgF0SdAPewIiA2sxMG8iAXZJyAEiAXRJ0A97AiIDazEzbyIBdkmEAiIBdEnQD3sCJAAIBAAAADcAAAD/D0EMIgJrNUm6bSICdzUi',
  'Ams2SbxtIgJ3NiIDazEwScRtIgN3MTAiA2sxM0nKbSIDdzEzJAAMBAAAAC0AAAD/D0EMIgJrNUmaTiIAIgJrNkmcTiIAIgNrMTBJpE4iACIDazEzSapOIgAk',
  'AAwEAAAAAAAAAAIAAAAgAAAA/w9BBCICazdvIgFuSQ57ASIDazE0byIBbkkcewEkAAQBAAAAAgAAACwAAAD/D0EEIgJrN0ECIgJhNyICYjckAAIiA2sxNEEC',
  'IgNhMTQiA2IxNCQAAiQABAIAAAACAAAAKgAAAP8PQQQiAms3OyIBeEkOIgF5SQ06BCIDazE0OyIBeEkcIgF5SRs6BCQABAMAAAACAAAALgAAAP8PQQQiAms3',
  'byIBdkmMASIBdEnQD3sCIgNrMTRvIgF2SZgCIgF0SdAPewIkAAQCAAAAHwAAAP8PQQYiAms3Sb5tIgJ3NyIDazE0ScxtIgN3MTQkAAYCAAAAGgAAAP8PQQYi',
  'Ams3SZ5OIgAiA2sxNEmsTiIAJAAGBAAAAAAAAAABAAAAFAAAAP8PQQIiA2sxMW8iAW5JFnsBJAACAQAAAAEAAAAbAAAA/w9BAiIDazExQQIiA2ExMSIDYjEx',
  'JAACJAACAgAAAAEAAAAZAAAA/w9BAiIDazExOyIBeEkWIgF5SRU6BCQAAgMAAAABAAAAGwAAAP8PQQIiA2sxMW8iAXZJ3AEiAXRJ0A97AiQAAgEAAAAUAAAA',
  '/w9BAyIDazExScZtIgN3MTEkAAMBAAAAEQAAAP8PQQMiA2sxMUmmTiIAJAADBAAAAAAAAAADAAAALAAAAP8PQQYiAmsybyIBbkkEewEiAms0byIBbkkIewEi',
  'A2sxMm8iAW5JGHsBJAAGAQAAAAMAAAA9AAAA/w9BBiICazJBAiICYTIiAmIyJAACIgJrNEECIgJhNCICYjQkAAIiA2sxMkECIgNhMTIiA2IxMiQAAiQABgIA',
  'AAADAAAAOwAAAP8PQQYiAmsyOyIBeEkEIgF5SQM6BCICazQ7IgF4SQgiAXlJBzoEIgNrMTI7IgF4SRgiAXlJFzoEJAAGAwAAAAMAAAA/AAAA/w9BBiICazJv',
  'IgF2SSgiAXRJ0A97AiICazRvIgF2SVAiAXRJ0A97AiIDazEybyIBdknwASIBdEnQD3sCJAAGAwAAACoAAAD/D0EJIgJrMkm0bSICdzIiAms0SbhtIgJ3NCID',
  'azEySchtIgN3MTIkAAkDAAAAIwAAAP8PQQkiAmsySZROIgAiAms0SZhOIgAiA2sxMkmoTiIAJAAJBAAAAAAAAAACAAAAHwAAAP8PQQQiAmswbyIBbkkAewEi',
  'Ams4byIBbkkQewEkAAQBAAAAAgAAACkAAAD/D0EEIgJrMEECIgJhMCICYjAkAAIiAms4QQIiAmE4IgJiOCQAAiQABAIAAAACAAAAMAAAAP8PQQQiAmswOyIB',
  'eEkAIgF5TgAAAAAAAACAOgQiAms4OyIBeEkQIgF5SQ86BCQABAMAAAACAAAALAAAAP8PQQQiAmswbyIBdkkAIgF0SdAPewIiAms4byIBdkmgASIBdEnQD3sC',
  'JAAEAgAAAB0AAAD/D0EGIgJrMEmwbSICdzAiAms4ScBtIgJ3OCQABgIAAAAZAAAA/w9BBiICazBJkE4iACICazhJoE4iACQABg==',
].join('');

test('a format 3 snapshot (before asynchronous snapshots) restores', () => {
  const clock = { now: 1000 };
  const backend = new HeapKeyedStateBackend({ maxParallelism: 8, keyGroupRange: keyGroupRange(0, 7), operatorName: 'v3', clock: () => clock.now });
  backend.restore([Buffer.from(FORMAT_3_SNAPSHOT, 'base64')]);
  const value = backend.getState(valueState<{ n: number }>('value'));
  const list = backend.getState(listState<string>('list'));
  const map = backend.getState(mapState<string, number>('map'));
  const ttl = backend.getState(enableTimeToLive(valueState<number>('ttl'), { ttl: '1h' }));
  for (let i = 0; i < 20; i++) {
    backend.setCurrentKey(`k${i}`);
    assert.deepEqual(value.value(), { n: i });
    assert.deepEqual(list.get(), [`a${i}`, `b${i}`]);
    assert.deepEqual(
      [...map.entries()],
      [
        ['x', i],
        ['y', -i],
      ],
    );
    assert.equal(ttl.value(), i * 10);
  }
  assert.equal(backend.numTimers('event'), 20);
  assert.equal(backend.numTimers('processing'), 20);
  const fired: [StateKey, number, string][] = [];
  backend.pollTimersUpTo('processing', 7001, (key, timestamp, namespace) => fired.push([key, timestamp, namespace]));
  assert.deepEqual(fired, [
    ['k0', 7000, 'w0'],
    ['k1', 7001, 'w1'],
  ]);
});

test('a format 3 snapshot written again is format 6 and restores the same', () => {
  const clock = { now: 1000 };
  const backend = () => new HeapKeyedStateBackend({ maxParallelism: 8, keyGroupRange: keyGroupRange(0, 7), operatorName: 'v3', clock: () => clock.now });
  const old = backend();
  old.restore([Buffer.from(FORMAT_3_SNAPSHOT, 'base64')]);
  const rewritten = old.snapshot();
  assert.equal(rewritten[4], 6);
  const again = backend();
  again.restore([rewritten]);
  assert.equal(again.numTimers('event'), 20);
  const value = again.getState(valueState<{ n: number }>('value'));
  again.setCurrentKey('k7');
  assert.deepEqual(value.value(), { n: 7 });
});
