import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as weir from '../../../../src/index.ts';

test("the package entry exports the PostgreSQL sink: import { postgresSink } from 'weir-streams'", () => {
  assert.equal(typeof weir.postgresSink, 'function');
  const sink = weir.postgresSink<{ id: number }>({ table: 'events', columns: ['id'], mode: 'append', toRow: (record) => record });
  assert.equal(sink.name, 'postgres sink (events)');
  assert.equal(sink.deliveryGuarantee, 'exactly-once');
});
