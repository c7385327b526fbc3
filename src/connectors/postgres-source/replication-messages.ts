/**
 * The streaming replication protocol's messages inside CopyData
 * (https://www.postgresql.org/docs/current/protocol-replication.html): from the server XLogData
 * ('w', a pgoutput message with its WAL position) and the primary keepalive ('k'); to the server
 * the standby status update ('r'), whose flush position is what the slot confirms.
 */
import type { Lsn } from './lsn.ts';
import { millisToPostgresTime } from './lsn.ts';

export type ReplicationMessage =
  | { kind: 'xlogdata'; walStart: Lsn; walEnd: Lsn; sendTime: bigint; data: Buffer }
  | { kind: 'keepalive'; walEnd: Lsn; sendTime: bigint; replyRequested: boolean };

/** One CopyData payload from the server. */
export function decodeReplicationMessage(frame: Buffer): ReplicationMessage {
  const tag = frame[0];
  if (tag === 0x77 && frame.length >= 25) {
    return {
      kind: 'xlogdata',
      walStart: frame.readBigUInt64BE(1),
      walEnd: frame.readBigUInt64BE(9),
      sendTime: frame.readBigInt64BE(17),
      data: frame.subarray(25),
    };
  }
  if (tag === 0x6b && frame.length >= 18) {
    return { kind: 'keepalive', walEnd: frame.readBigUInt64BE(1), sendTime: frame.readBigInt64BE(9), replyRequested: frame[17] === 1 };
  }
  throw new Error(`replication stream: unexpected CopyData message 0x${(tag ?? 0).toString(16)} of ${frame.length} bytes`);
}

/**
 * The standby status update: written, flushed and applied all `lsn` (the position the latest
 * completed checkpoint holds: the slot may free the WAL before it, and a restart of the slot
 * begins after it), `replyRequested` asking the server to answer at once.
 */
export function standbyStatusUpdate(lsn: Lsn, nowMillis: number, replyRequested = false): Buffer {
  const frame = Buffer.alloc(34);
  frame[0] = 0x72; // 'r'
  frame.writeBigUInt64BE(lsn, 1);
  frame.writeBigUInt64BE(lsn, 9);
  frame.writeBigUInt64BE(lsn, 17);
  frame.writeBigInt64BE(millisToPostgresTime(nowMillis), 25);
  frame[33] = replyRequested ? 1 : 0;
  return frame;
}
