import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatLsn, parseLsn, postgresTimeToMillis } from '../../../../src/connectors/postgres-source/lsn.ts';
import { decodePgoutput, PGOUTPUT_PROTOCOL_VERSION, UNCHANGED_TOAST } from '../../../../src/connectors/postgres-source/pgoutput-decoder.ts';
import { decodeReplicationMessage, standbyStatusUpdate } from '../../../../src/connectors/postgres-source/replication-messages.ts';
import { Bytes, begin, commit, insert, keepalive, relation, xlogData } from './pgoutput-bytes.ts';

describe('pgoutput decoder (protocol version 1)', () => {
  test('is version 1', () => assert.equal(PGOUTPUT_PROTOCOL_VERSION, 1));

  test('Begin and Commit: LSNs, commit time, xid', () => {
    assert.deepEqual(decodePgoutput(begin(0x1_0000_0020n, 731, 5_000_000n)), { tag: 'begin', finalLsn: 0x1_0000_0020n, commitTime: 5_000_000n, xid: 731 });
    assert.deepEqual(decodePgoutput(commit(0x20n, 0x48n)), { tag: 'commit', flags: 0, commitLsn: 0x20n, endLsn: 0x48n, commitTime: 0n });
  });

  test('Relation: schema, table, replica identity, columns with key flags and type OIDs', () => {
    const message = decodePgoutput(
      relation(
        16_384,
        'sales',
        'orders',
        [
          ['id', 23, true],
          ['note', 25, false],
        ],
        'f',
      ),
    );
    assert.deepEqual(message, {
      tag: 'relation',
      relationId: 16_384,
      schema: 'sales',
      table: 'orders',
      replicaIdentity: 'f',
      columns: [
        { key: true, name: 'id', typeOid: 23, typeModifier: -1 },
        { key: false, name: 'note', typeOid: 25, typeModifier: -1 },
      ],
    });
  });

  test('Insert, Update (with and without the old tuple), Delete (key and full); null, unchanged TOAST, UTF-8 text', () => {
    assert.deepEqual(decodePgoutput(insert(7, ['1', null, 'héllo'])), { tag: 'insert', relationId: 7, after: ['1', null, 'héllo'] });
    assert.deepEqual(decodePgoutput(new Bytes().char('U').uint32(7).char('N').tuple(['1', 'u']).done()), {
      tag: 'update',
      relationId: 7,
      after: ['1', UNCHANGED_TOAST],
    });
    assert.deepEqual(decodePgoutput(new Bytes().char('U').uint32(7).char('K').tuple(['1', null]).char('N').tuple(['2', 'x']).done()), {
      tag: 'update',
      relationId: 7,
      before: ['1', null],
      beforeIsKey: true,
      after: ['2', 'x'],
    });
    assert.deepEqual(decodePgoutput(new Bytes().char('D').uint32(7).char('O').tuple(['1', 'x']).done()), {
      tag: 'delete',
      relationId: 7,
      before: ['1', 'x'],
      beforeIsKey: false,
    });
  });

  test('Truncate, Type, Origin and logical Message', () => {
    assert.deepEqual(decodePgoutput(new Bytes().char('T').uint32(2).int8(1).uint32(7).uint32(8).done()), { tag: 'truncate', options: 1, relationIds: [7, 8] });
    assert.deepEqual(decodePgoutput(new Bytes().char('Y').uint32(90_000).string('public').string('mood').done()), {
      tag: 'type',
      typeOid: 90_000,
      schema: 'public',
      name: 'mood',
    });
    assert.deepEqual(decodePgoutput(new Bytes().char('O').int64(0x30n).string('node_a').done()), { tag: 'origin', commitLsn: 0x30n, name: 'node_a' });
    const message = decodePgoutput(new Bytes().char('M').int8(1).int64(0x40n).string('weir').uint32(3).char('abc').done());
    assert.equal(message.tag, 'message');
    assert.equal(message.tag === 'message' && message.content.toString(), 'abc');
  });

  test('malformed and unknown messages are refused, naming the message', () => {
    assert.throws(() => decodePgoutput(begin(1n, 2).subarray(0, 10)), /pgoutput message "B" ends early/);
    assert.throws(() => decodePgoutput(new Bytes().char('S').uint32(1).done()), /pgoutput message "S" .* is not one of protocol version 1/);
    assert.throws(() => decodePgoutput(new Bytes().char('I').uint32(7).char('X').done()), /expected tuple kind "N", got "X"/);
    assert.throws(() => decodePgoutput(new Bytes().char('I').uint32(7).char('N').int16(1).char('b').uint32(1).char('x').done()), /binary column value/);
  });
});

describe('replication protocol messages and LSNs', () => {
  test('XLogData and keepalive frames', () => {
    const frame = decodeReplicationMessage(xlogData(0x16b3748n, begin(5n, 1)));
    assert.equal(frame.kind, 'xlogdata');
    assert.equal(frame.kind === 'xlogdata' && frame.walStart, 0x16b3748n);
    assert.equal(frame.kind === 'xlogdata' && frame.data[0], 0x42);
    assert.deepEqual(decodeReplicationMessage(keepalive(99n, true)), { kind: 'keepalive', walEnd: 99n, sendTime: 0n, replyRequested: true });
    assert.throws(() => decodeReplicationMessage(Buffer.from([0x7a, 1])), /unexpected CopyData message 0x7a/);
  });

  test('the standby status update confirms one LSN as written, flushed and applied', () => {
    const update = standbyStatusUpdate(0x1_0000_0abcn, 946_684_800_000 + 1, true);
    assert.equal(update.length, 34);
    assert.equal(String.fromCharCode(update[0] as number), 'r');
    assert.deepEqual([update.readBigUInt64BE(1), update.readBigUInt64BE(9), update.readBigUInt64BE(17)], [0x1_0000_0abcn, 0x1_0000_0abcn, 0x1_0000_0abcn]);
    assert.equal(update.readBigInt64BE(25), 1000n); // microseconds since 2000-01-01
    assert.equal(update[33], 1);
  });

  test('LSN text round trip, and PostgreSQL time to milliseconds', () => {
    assert.equal(parseLsn('16/B374D848'), 0x16_b374_d848n);
    assert.equal(formatLsn(0x16_b374_d848n), '16/B374D848');
    assert.equal(formatLsn(0n), '0/0');
    assert.throws(() => parseLsn('nope'), /not an LSN/);
    assert.equal(postgresTimeToMillis(0n), Date.UTC(2000, 0, 1));
  });
});
