import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ChangeStreamDecoder, type StreamItem } from '../../../../src/connectors/postgres-source/change-stream-decoder.ts';
import { Bytes, begin, commit, insert, keepalive, relation, xlogData } from './pgoutput-bytes.ts';

const items = (decoder: ChangeStreamDecoder, frames: Buffer[]) => {
  const out: StreamItem[] = [];
  for (const frame of frames) decoder.decode(frame, out);
  return out.map((item) =>
    item.kind === 'change'
      ? `${item.record.op} ${JSON.stringify(item.record.after ?? item.record.before)} @${item.record.commitLsn}`
      : `${item.kind} ${(item.kind === 'commit' ? item.endLsn : item.lsn).toString(16)}`,
  );
};

/** Two transactions: A commits at 0x100 (end 0x128) with 3 inserts, B at 0x200 (end 0x228) with 1. */
const stream = [
  xlogData(0x50n, begin(0x100n, 10)),
  xlogData(
    0x50n,
    relation(1, 'public', 'items', [
      ['id', 23, true],
      ['doc', 3802, false],
    ]),
  ),
  xlogData(0x60n, insert(1, ['1', '{"a":1}'])),
  xlogData(0x70n, insert(1, ['2', null])),
  xlogData(0x80n, insert(1, ['3', 'u'])),
  xlogData(0x128n, commit(0x100n, 0x128n)),
  xlogData(0x150n, begin(0x200n, 11)),
  xlogData(0x160n, insert(1, ['4', null])),
  xlogData(0x228n, commit(0x200n, 0x228n)),
];

describe('change stream decoder', () => {
  test('typed changes in commit order, each with its commit LSN; a commit moves the position', () => {
    assert.deepEqual(items(new ChangeStreamDecoder({ lsn: 0n }), stream), [
      'insert {"id":1,"doc":{"a":1}} @0/100',
      'insert {"id":2,"doc":null} @0/100',
      'insert {"id":3} @0/100',
      'commit 128',
      'insert {"id":4,"doc":null} @0/200',
      'commit 228',
    ]);
  });

  test('restored after A: A (committed before the position) is skipped whole', () => {
    const decoder = new ChangeStreamDecoder({ lsn: 0x128n });
    assert.deepEqual(items(decoder, stream), ['insert {"id":4,"doc":null} @0/200', 'commit 228']);
    assert.equal(decoder.skipped, 3);
  });

  test('restored in the middle of A (2 of its changes emitted): the rest of A, then B', () => {
    const decoder = new ChangeStreamDecoder({ lsn: 0x40n, partial: { commitLsn: 0x100n, emitted: 2 } });
    assert.deepEqual(items(decoder, stream), ['insert {"id":3} @0/100', 'commit 128', 'insert {"id":4,"doc":null} @0/200', 'commit 228']);
  });

  test('a keepalive is a position only between transactions, and says when it asks for an answer', () => {
    const decoder = new ChangeStreamDecoder({ lsn: 0n });
    const out: StreamItem[] = [];
    assert.equal(decoder.decode(xlogData(0x50n, begin(0x100n, 10)), out), false);
    assert.equal(decoder.decode(keepalive(0x300n, true), out), true);
    assert.deepEqual(out, [], 'inside a transaction the keepalive may be past its commit: no position');
    decoder.decode(xlogData(0x128n, commit(0x100n, 0x128n)), out);
    decoder.decode(keepalive(0x300n, false), out);
    assert.deepEqual(out, [
      { kind: 'commit', endLsn: 0x128n },
      { kind: 'position', lsn: 0x300n },
    ]);
  });

  test('updates and deletes: the old tuple (key only for a key tuple), tables outside `tables` dropped', () => {
    const decoder = new ChangeStreamDecoder({ lsn: 0n }, (schema, table) => schema === 'public' && table === 'items');
    const frames = [
      xlogData(0x10n, begin(0x100n, 1)),
      xlogData(
        0x10n,
        relation(1, 'public', 'items', [
          ['id', 23, true],
          ['n', 20, false],
        ]),
      ),
      xlogData(0x10n, relation(2, 'public', 'other', [['id', 23, true]])),
      xlogData(0x20n, new Bytes().char('U').uint32(1).char('K').tuple(['1', null]).char('N').tuple(['5', '9007199254740993']).done()),
      xlogData(0x30n, new Bytes().char('D').uint32(1).char('K').tuple(['5', null]).done()),
      xlogData(0x40n, insert(2, ['1'])),
      xlogData(0x128n, commit(0x100n, 0x128n)),
    ];
    const out: StreamItem[] = [];
    for (const frame of frames) decoder.decode(frame, out);
    const records = out.flatMap((item) => (item.kind === 'change' ? [item.record] : []));
    assert.deepEqual(
      records.map(({ op, before, after, lsn, xid }) => ({ op, before, after, lsn, xid })),
      [
        { op: 'update', before: { id: 1 }, after: { id: 5, n: '9007199254740993' }, lsn: '0/20', xid: 1 },
        { op: 'delete', before: { id: 5 }, after: undefined, lsn: '0/30', xid: 1 },
      ],
    );
  });

  test('a change of a relation never described is refused', () => {
    assert.throws(() => new ChangeStreamDecoder({ lsn: 0n }).decode(xlogData(1n, insert(9, ['1'])), []), /relation 9 before its Relation message/);
  });
});
