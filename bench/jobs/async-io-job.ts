/**
 * The async I/O benchmark's job, shaped by the environment (every worker thread sees the same):
 * AB_RECORDS datagen records -> orderedWait or unorderedWait (AB_MODE) with AB_CAPACITY in flight
 * -> discarding sink. The lookup waits AB_LATENCY_MS (AB_JITTER=1: uniformly 0 to twice that), or,
 * with AB_SERVICE set, asks that HTTP service (GET /?seq=N).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AsyncDataStream } from '../../src/api/async-data-stream.ts';
import { defineJob } from '../../src/api/define-job.ts';
import { dataGenSource } from '../../src/connectors/datagen/datagen-source.ts';
import { discardingSink } from '../../src/connectors/discarding-sink.ts';
import type { AsyncInvoke } from '../../src/core/functions/async-function.ts';

interface Entry {
  seq: number;
  key: string;
  amount: number;
}

const latency = Number(process.env.AB_LATENCY_MS ?? 10);
const jitter = process.env.AB_JITTER === '1';
const service = process.env.AB_SERVICE;

const simulated: AsyncInvoke<Entry, Entry> = async (entry) => {
  await sleep(jitter ? Math.random() * 2 * latency : latency);
  return [entry];
};
const overHttp: AsyncInvoke<Entry, Entry> = async (entry, { signal }) => {
  const response = await fetch(`${service}/?seq=${entry.seq}`, { signal });
  await response.arrayBuffer();
  return [entry];
};

export default defineJob({
  name: 'bench-async-io',
  build(env) {
    const input = env.fromSource(dataGenSource({ count: Number(process.env.AB_RECORDS) }), { uid: 'input' });
    const wait = process.env.AB_MODE === 'unordered' ? AsyncDataStream.unorderedWait : AsyncDataStream.orderedWait;
    wait(input, service === undefined ? simulated : overHttp, { timeout: '30s', capacity: Number(process.env.AB_CAPACITY), uid: 'lookup' }).sinkTo(
      discardingSink(),
      { uid: 'output' },
    );
  },
});
