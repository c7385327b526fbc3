import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { type RegistryHttpAnswer, type RegistryHttpRequest, registryHttpCall } from './registry-http.ts';

/**
 * A registry request made synchronously, for the rare moment a decoder meets a schema id it has
 * not cached (or an encoder its subject's id) inside a synchronous batch loop: a helper thread
 * (one per thread that needs it, started on first use, never keeping the process alive) makes
 * the request with registryHttpCall and the caller waits on a shared flag. Blocks the caller for
 * one round trip, once per schema id (as Flink's Confluent registry format does on a cache miss).
 */
interface Helper {
  port: MessagePort;
  flag: Int32Array;
  seq: number;
}

let helper: Helper | undefined;

function startHelper(): Helper {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  const source = `
const { workerData } = require('node:worker_threads');
const registryHttpCall = ${registryHttpCall.toString()};
const { port, flag } = workerData;
port.on('message', async (request) => {
  const answer = await registryHttpCall(request);
  port.postMessage(answer);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});`;
  const worker = new Worker(source, { eval: true, workerData: { port: port2, flag }, transferList: [port2] });
  worker.unref();
  port1.unref();
  return { port: port1, flag, seq: 0 };
}

export function registryHttpCallSync(request: RegistryHttpRequest): RegistryHttpAnswer {
  helper ??= startHelper();
  const seq = ++helper.seq;
  Atomics.store(helper.flag, 0, 0);
  helper.port.postMessage({ ...request, seq });
  const deadline = Date.now() + request.timeoutMs + 5000;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) return { seq, status: 0, text: '', error: `no answer within ${request.timeoutMs} ms`, errorCode: 'ETIMEDOUT' };
    Atomics.wait(helper.flag, 0, 0, Math.min(left, 100)); // bounded: a flag reset after a stale answer cannot hide the real one
    for (let message = receiveMessageOnPort(helper.port); message !== undefined; message = receiveMessageOnPort(helper.port)) {
      const answer = message.message as RegistryHttpAnswer;
      if (answer.seq === seq) return answer; // an earlier request's late answer is dropped
    }
    Atomics.store(helper.flag, 0, 0);
  }
}

/** Waits `ms` milliseconds without returning to the event loop (the synchronous path's back-off). */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
