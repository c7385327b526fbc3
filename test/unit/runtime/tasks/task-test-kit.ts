/**
 * What the task tests share: record writers that record what a task sends downstream, a recording
 * stand-in for the worker's channel to the job master, a checkpoint storage in a temporary folder,
 * and a wait for something the task does on its own loop.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { CheckpointLocation } from '../../../../src/checkpoint/storage/checkpoint-location.ts';
import { FileSystemCheckpointStorage } from '../../../../src/checkpoint/storage/file-system-checkpoint-storage.ts';
import type { FromWorker } from '../../../../src/runtime/deployment/worker-messages.ts';
import type { RecordWriter } from '../../../../src/runtime/io/record-writer.ts';

export type WriterEvent =
  | { kind: 'records'; records: unknown[]; timestamps: number[] | undefined }
  | { kind: 'barrier'; checkpointId: number }
  | { kind: 'watermark'; watermark: number }
  | { kind: 'watermark-status'; idle: boolean }
  | { kind: 'end-of-data' };

/** A RecordWriter stand-in: every call is recorded, in order (into a shared log too, when given one). */
export class FakeRecordWriter {
  readonly events: WriterEvent[] = [];
  readonly outputTag: string | undefined;
  available = true;
  readonly #log: WriterEvent[] | undefined;

  constructor(options: { outputTag?: string; log?: WriterEvent[] } = {}) {
    this.outputTag = options.outputTag;
    this.#log = options.log;
  }

  emit(batch: unknown[], timestamps?: number[]): void {
    this.#record({ kind: 'records', records: [...batch], timestamps: timestamps === undefined ? undefined : [...timestamps] });
  }

  broadcastBarrier(location: CheckpointLocation): void {
    this.#record({ kind: 'barrier', checkpointId: location.checkpointId });
  }

  broadcastWatermark(watermark: number): void {
    this.#record({ kind: 'watermark', watermark });
  }

  broadcastWatermarkStatus(idle: boolean): void {
    this.#record({ kind: 'watermark-status', idle });
  }

  broadcastEndOfData(): void {
    this.#record({ kind: 'end-of-data' });
  }

  /** Every record emitted, in order. */
  get records(): unknown[] {
    return this.events.flatMap((event) => (event.kind === 'records' ? event.records : []));
  }

  /** The events as short strings (`[1,2]`, `barrier 1`, `watermark 5`, `idle`, `active`, `end`), for order checks. */
  get trace(): string[] {
    return this.events.map(describe);
  }

  asRecordWriter(): RecordWriter {
    return this as unknown as RecordWriter;
  }

  #record(event: WriterEvent): void {
    this.events.push(event);
    this.#log?.push(event);
  }
}

export function describe(event: WriterEvent): string {
  switch (event.kind) {
    case 'records':
      return JSON.stringify(event.records);
    case 'barrier':
      return `barrier ${event.checkpointId}`;
    case 'watermark':
      return `watermark ${event.watermark}`;
    case 'watermark-status':
      return event.idle ? 'idle' : 'active';
    case 'end-of-data':
      return 'end';
  }
}

/** The worker's messages to the job master, as a task sends them. */
export class RecordingMaster {
  readonly messages: FromWorker[] = [];
  readonly send = (message: FromWorker): void => {
    this.messages.push(message);
  };

  of<T extends FromWorker['type']>(type: T): Extract<FromWorker, { type: T }>[] {
    return this.messages.filter((message): message is Extract<FromWorker, { type: T }> => message.type === type);
  }
}

export async function tempStorage(t: TestContext, prefix = 'weir-task-test-'): Promise<FileSystemCheckpointStorage> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  t.after(() => rm(root, { recursive: true, force: true }));
  const storage = new FileSystemCheckpointStorage(join(root, 'job'));
  await storage.initialize();
  return storage;
}

/** Resolves once `predicate` holds; rejects naming `what` after `timeoutMs`. */
export async function until(predicate: () => boolean, what: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Lets every immediate and microtask queued so far run (a few turns of the event loop). */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

export function locationOf(checkpointId: number, kind: CheckpointLocation['kind'] = 'checkpoint'): CheckpointLocation {
  return { kind, checkpointId, path: `/nonexistent/chk-${checkpointId}` };
}
