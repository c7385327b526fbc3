/**
 * Cluster membership through Kafka's group protocol against the real broker: member processes
 * share 12 tasks (every task owned by exactly one member, at one generation); a SIGKILLed member's
 * tasks go to the others after the session timeout; a member SIGSTOPped past it is out (the others
 * own everything), and when SIGCONTed it learns so, gives its tasks up at once and rejoins; a
 * static member restarted within the session timeout gets its tasks back.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { formatBootstrap } from '../../../src/connectors/kafka/kafka-connection-options.ts';
import { testBrokers } from '../../harness/kafka.ts';
import { until } from '../../harness/weir-run.ts';

const fixture = join(import.meta.dirname, '..', '..', 'fixtures', 'cluster-member.ts');
const SESSION_MS = 6000; // the broker's group.min.session.timeout.ms
const TASKS = 12;

interface Change {
  generation: number;
  tasks: number[];
  assigned: number[];
  revoked: number[];
}
interface Member {
  name: string;
  child: ChildProcess;
  changes: Change[];
  stderr: string;
  latest(): Change | undefined;
}

const members: Member[] = [];
after(() => {
  for (const member of members) member.child.kill('SIGKILL');
});

function startMember(name: string, group: string, instance?: string): Member {
  const child = spawn(process.execPath, [fixture], {
    env: {
      ...process.env,
      KAFKA_BROKERS: formatBootstrap(testBrokers()),
      CM_GROUP: group,
      CM_TASKS: String(TASKS),
      CM_SESSION_MS: String(SESSION_MS),
      CM_INSTANCE: instance ?? '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const member: Member = { name, child, changes: [], stderr: '', latest: () => member.changes.at(-1) };
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let newline = buffer.indexOf('\n'); newline >= 0; newline = buffer.indexOf('\n')) {
      member.changes.push(JSON.parse(buffer.slice(0, newline)) as Change);
      buffer = buffer.slice(newline + 1);
    }
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    member.stderr += chunk.toString();
  });
  members.push(member);
  return member;
}

/** Waits until these members own every task exactly once, all at one generation; returns each one's tasks. */
async function settled(group: Member[], what: string, timeoutMs = 60_000): Promise<number[][]> {
  let seen = '';
  try {
    return await until(
      what,
      async () => {
        const latest = group.map((member) => member.latest());
        seen = JSON.stringify(latest.map((change, i) => [group[i]?.name, change?.generation, change?.tasks]));
        if (latest.some((change) => change === undefined)) return undefined;
        const generations = new Set(latest.map((change) => change?.generation));
        const all = latest.flatMap((change) => change?.tasks ?? []).sort((a, b) => a - b);
        const exact = all.length === TASKS && all.every((task, i) => task === i);
        return generations.size === 1 && exact ? latest.map((change) => change?.tasks ?? []) : undefined;
      },
      timeoutMs,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}; last seen ${seen}; stderr: ${group.map((member) => `${member.name}: ${member.stderr}`).join(' | ')}`);
  }
}

test('three members share the tasks; SIGKILL of one hands its tasks to the others after the session timeout', async () => {
  const group = `weir-test-cluster-${randomBytes(4).toString('hex')}`;
  const [a, b, c] = ['a', 'b', 'c'].map((name) => startMember(name, group)) as [Member, Member, Member];
  const shares = await settled([a, b, c], 'three members own every task once');
  assert.deepEqual(
    shares.map((tasks) => tasks.length),
    [4, 4, 4],
  );
  const killedAt = Date.now();
  c.child.kill('SIGKILL');
  const after = await settled([a, b], 'the two left own every task once');
  const took = Date.now() - killedAt;
  assert.deepEqual(
    after.map((tasks) => tasks.length),
    [6, 6],
  );
  // Sticky: a and b kept what they had.
  assert.ok((shares[0] as number[]).every((task) => (after[0] as number[]).includes(task)));
  assert.ok((shares[1] as number[]).every((task) => (after[1] as number[]).includes(task)));
  assert.ok(took < SESSION_MS + 15_000, `failover took ${took} ms`);
  for (const member of [a, b]) member.child.kill('SIGTERM');
});

test('a zombie: SIGSTOP past the session timeout, the other takes everything; SIGCONT: it gives its tasks up at once and rejoins', async () => {
  const group = `weir-test-cluster-${randomBytes(4).toString('hex')}`;
  const a = startMember('a', group);
  const b = startMember('b', group);
  await settled([a, b], 'two members own every task once');
  b.child.kill('SIGSTOP');
  await until('a owns every task', async () => (a.latest()?.tasks.length === TASKS ? true : undefined), SESSION_MS + 30_000);
  const zombieChanges = b.changes.length;
  b.child.kill('SIGCONT');
  // The zombie learns it is out and revokes every task before anything else.
  const revokedAll = await until(
    'the zombie gives its tasks up',
    async () => b.changes.slice(zombieChanges).find((change) => change.tasks.length === 0),
    30_000,
  );
  assert.ok(revokedAll.revoked.length > 0);
  assert.match(b.stderr, /this member is out of the group \((UNKNOWN_MEMBER_ID|ILLEGAL_GENERATION)/);
  await settled([a, b], 'after the zombie rejoined, the two share again');
  for (const member of [a, b]) member.child.kill('SIGTERM');
});

test('static membership: a member restarted under its instance id within the session timeout gets its tasks back', async () => {
  const group = `weir-test-cluster-${randomBytes(4).toString('hex')}`;
  const a = startMember('a', group, 'pod-0');
  const b = startMember('b', group, 'pod-1');
  const [, before] = await settled([a, b], 'two static members own every task once');
  b.child.kill('SIGKILL');
  const again = startMember('b-again', group, 'pod-1');
  const [, mine] = await settled([a, again], 'the restarted member owns its tasks again', SESSION_MS * 3);
  assert.deepEqual(mine, before);
  for (const member of [a, again]) member.child.kill('SIGTERM');
});
