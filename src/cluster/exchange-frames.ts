import { deserialize, serialize } from 'node:v8';
import type { TopicRecord } from '../connectors/kafka/partition-fetcher.ts';
import { WeirError } from '../core/errors/weir-error.ts';

/**
 * What an exchange topic's records hold: frames one upstream task writes into one partition, in
 * order, inside its transactions. A records frame is a batch of the job's records (with their
 * event times), a watermark frame the upstream task's watermark and whether it is idle (written
 * into every partition at every checkpoint, so a downstream task takes the minimum over its
 * upstream tasks, idle ones left out, as a task does over its channels in one process).
 *
 * A barrier frame (version 2) is savepoint S's barrier (Flink's CheckpointBarrier on a channel):
 * the upstream task wrote it, after its watermark frame, into every partition it writes, in the
 * transaction that committed its state for S; a downstream task aligns on it (savepoint-alignment.ts).
 *
 * An end frame (version 3) says the upstream task's input ended (bounded input): it finished its
 * operators and wrote nothing after it; it goes into every partition the task writes, behind its
 * last watermark frame, in the transaction of its final checkpoint (whose record says `ended`). A
 * downstream task ends once every channel's end frame came (Flink's EndOfData on every channel).
 *
 * Encoded with Node's structured serialization (node:v8), which keeps what JSON loses (undefined,
 * Date, Map, BigInt, binary data); every frame carries its format version. Records and watermark
 * frames are still written as version 1 (a member of the Weir before barriers reads them); a
 * barrier frame is version 2 and an end frame version 3 (a member of an older Weir refuses them by
 * name: the cluster's Weir versions differ).
 */
export const EXCHANGE_FRAME_VERSION = 1;
/** The frame version of barrier frames. */
export const EXCHANGE_BARRIER_FRAME_VERSION = 2;
/** The newest frame version this Weir reads and writes (end frames). */
export const EXCHANGE_END_FRAME_VERSION = 3;

/** What a savepoint's barrier carries: the savepoint, its folder, and whether the cluster stops with it. */
export interface SavepointBarrier {
  savepoint: number;
  target: string;
  stop: 'suspend' | 'drain' | undefined;
}

export type ExchangeFrame =
  | { kind: 'records'; from: number; records: unknown[]; timestamps: number[] | undefined }
  | { kind: 'watermark'; from: number; watermark: number; idle: boolean }
  | ({ kind: 'barrier'; from: number } & SavepointBarrier)
  | { kind: 'end'; from: number };

type Encoded =
  | [version: number, kind: 'r', from: number, records: unknown[], timestamps: number[] | undefined]
  | [version: number, kind: 'w', from: number, watermark: number, idle: boolean]
  | [version: number, kind: 'b', from: number, savepoint: number, options: { target: string; stop: 'suspend' | 'drain' | undefined }]
  | [version: number, kind: 'e', from: number];

export function encodeRecordsFrame(from: number, records: unknown[], timestamps: number[] | undefined): Buffer {
  return serialize([EXCHANGE_FRAME_VERSION, 'r', from, records, timestamps] satisfies Encoded);
}

export function encodeWatermarkFrame(from: number, watermark: number, idle: boolean): Buffer {
  return serialize([EXCHANGE_FRAME_VERSION, 'w', from, watermark, idle] satisfies Encoded);
}

export function encodeBarrierFrame(from: number, barrier: SavepointBarrier): Buffer {
  return serialize([EXCHANGE_BARRIER_FRAME_VERSION, 'b', from, barrier.savepoint, { target: barrier.target, stop: barrier.stop }] satisfies Encoded);
}

/** The upstream task `from` ended: nothing follows in this partition from it. */
export function encodeEndFrame(from: number): Buffer {
  return serialize([EXCHANGE_END_FRAME_VERSION, 'e', from] satisfies Encoded);
}

export function decodeFrame(record: TopicRecord): ExchangeFrame {
  let decoded: unknown;
  try {
    decoded = record.value === null ? undefined : deserialize(record.value);
  } catch (error) {
    throw corrupt(record, (error as Error).message);
  }
  if (!Array.isArray(decoded) || typeof decoded[0] !== 'number') throw corrupt(record, 'not an exchange frame');
  const [version, kind, from, a, b] = decoded as Encoded;
  // Version 2 brought barrier frames, version 3 end frames (only they are written so); anything else newer is refused.
  if (
    version !== EXCHANGE_FRAME_VERSION &&
    !(version === EXCHANGE_BARRIER_FRAME_VERSION && kind === 'b') &&
    !(version === EXCHANGE_END_FRAME_VERSION && kind === 'e')
  ) {
    throw new WeirError(
      'CHECKPOINT_METADATA_TOO_NEW',
      `${where(record)} holds an exchange frame of version ${version}; this Weir reads version ${EXCHANGE_FRAME_VERSION} (${EXCHANGE_BARRIER_FRAME_VERSION} for barrier frames, ${EXCHANGE_END_FRAME_VERSION} for end frames)`,
      { hint: 'run every member of the cluster with the same Weir version', fault: 'external' },
    );
  }
  if (kind === 'r') return { kind: 'records', from, records: a as unknown[], timestamps: b as number[] | undefined };
  if (kind === 'w') return { kind: 'watermark', from, watermark: a as number, idle: b as boolean };
  if (kind === 'b') {
    const options = b as { target: string; stop: 'suspend' | 'drain' | undefined };
    return { kind: 'barrier', from, savepoint: a as number, target: options.target, stop: options.stop };
  }
  if (kind === 'e') return { kind: 'end', from };
  throw corrupt(record, `unknown frame kind ${JSON.stringify(kind)}`);
}

const where = (record: TopicRecord) => `exchange topic "${record.topic}" partition ${record.partition} offset ${record.offset}`;

function corrupt(record: TopicRecord, why: string): WeirError {
  return new WeirError('CHECKPOINT_METADATA_CORRUPT', `${where(record)} does not read: ${why}`, {
    hint: 'an exchange topic is the job’s own: nothing but its members may write to it',
    fault: 'external',
  });
}
