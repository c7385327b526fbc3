import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type PrefixUse, prefixInUseFindings } from '../../../../src/connectors/postgres/postgres-prefix-in-use.ts';

const where = 'postgres sink "totals"';
const own = { database: 'app', role: 'writer' };
const findings = (use: PrefixUse) => prefixInUseFindings(where, 'weir-orders-totals', own, use, "set the sink's gidPrefix");
const prepared = (gid: string, database = 'app', owner = 'writer') => ({ gid, database, owner, prepared: '2026-12-05 18:00:00+00' });

test("nobody else: no findings; this job's own leftovers (same database and role, no session) are for its restore", () => {
  assert.deepEqual(findings({ prepared: [], sessions: [] }), []);
  assert.deepEqual(findings({ prepared: [prepared('weir-orders-totals-0-4'), prepared('weir-orders-totals-1-4')], sessions: [] }), []);
});

test('prepared transactions in another database or of another role are refused, each named, with the setting and the fix', () => {
  const [finding, more] = findings({
    prepared: [prepared('weir-orders-totals-0-4', 'staging'), prepared('weir-orders-totals-1-4', 'app', 'etl'), prepared('weir-orders-totals-1-5')],
    sessions: [],
  });
  assert.equal(more, undefined, 'one finding');
  assert.equal(finding?.level, 'error');
  assert.match(
    finding?.message ?? '',
    /gid prefix "weir-orders-totals" is another job's: prepared transaction "weir-orders-totals-0-4" \(database "staging", role "writer"/,
  );
  assert.match(finding?.message ?? '', /"weir-orders-totals-1-4" \(database "app", role "etl"/);
  assert.doesNotMatch(finding?.message ?? '', /-1-5/);
  assert.match(finding?.message ?? '', /writes to database "app" as role "writer", so its recovery cannot end them/);
  assert.match(
    finding?.hint ?? '',
    /set the sink's gidPrefix .*COMMIT PREPARED 'weir-orders-totals-0-4' if its checkpoint completed, else ROLLBACK PREPARED 'weir-orders-totals-0-4'/,
  );
});

test('live sessions under the prefix are another running job: refused', () => {
  const [finding] = findings({ prepared: [], sessions: [{ pid: 42, applicationName: 'weir weir-orders-totals-0', database: 'app' }] });
  assert.match(
    finding?.message ?? '',
    /another live job writes under its gid prefix "weir-orders-totals": session "weir weir-orders-totals-0" \(pid 42, database "app"\) connected/,
  );
  assert.match(finding?.hint ?? '', /set the sink's gidPrefix; if the other job is a stale copy of this one, stop it first/);
});
