import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeOperatorUid, encodeOperatorUid, MAX_ENCODED_UID_LENGTH, stateFileName } from '../../../../src/checkpoint/storage/state-file-name.ts';

test('odd uids become safe, reversible file names', () => {
  for (const uid of ['a/b c:é', 'kafka-source', 'Sink_1.v2', '.hidden', '..', '%41', 'a\\b*?"<>|', '日本語', '😀']) {
    const encoded = encodeOperatorUid(uid);
    assert.match(encoded, /^[A-Za-z0-9_%-][A-Za-z0-9_.%-]*$/, `${uid} -> ${encoded}`);
    assert.equal(decodeOperatorUid(encoded), uid);
  }
  assert.equal(encodeOperatorUid('a/b c:é'), 'a%2Fb%20c%3A%C3%A9');
  assert.equal(stateFileName('a/b c:é', 3, 'keyed'), 'a%2Fb%20c%3A%C3%A9-3.keyed');
  assert.equal(stateFileName('map', 0, 'operator'), 'map-0.operator');
});

test('distinct uids give distinct names', () => {
  const uids = ['a b', 'a%20b', 'a-b', 'a_b', 'a.b', '.ab', '%2Eab'];
  assert.equal(new Set(uids.map(encodeOperatorUid)).size, uids.length);
});

test('a very long uid is cut to a bounded name ending in a hash of the whole uid', () => {
  const long = 'é'.repeat(300);
  const encoded = encodeOperatorUid(long);
  assert.ok(encoded.length <= MAX_ENCODED_UID_LENGTH, `${encoded.length}`);
  assert.match(encoded, /^(%[0-9A-F]{2})+~[0-9a-f]{16}$/);
  assert.notEqual(encodeOperatorUid(`${long}x`), encoded);
  assert.equal(decodeOperatorUid(encoded), undefined);
  assert.ok(Buffer.byteLength(stateFileName(long, 1023, 'operator')) < 255);
});
