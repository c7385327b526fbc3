/**
 * The broadcast state pattern across a rescale: rules broadcast to a keyed stream of events, the
 * job stopped with a savepoint at parallelism 2 while rules are still arriving, and resumed at 3.
 * Rules that came before the savepoint are read from the restored broadcast state by every new
 * subtask (the rules source does not send them again), events waiting for later rules come back
 * from keyed state, and the output is exact: every event once, multiplied by its rule.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startJob } from '../../../src/runtime/jobmaster/job-master.ts';
import { multiplierOf, type RuledEvent } from '../../fixtures/jobs/broadcast-rules-job.ts';

const jobModule = join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'broadcast-rules-job.ts');
const folders: string[] = [];
after(async () => {
  for (const folder of folders) await rm(folder, { recursive: true, force: true });
});

const committed = (folder: string): RuledEvent[] =>
  existsSync(folder)
    ? readdirSync(folder)
        .filter((name) => name.startsWith('part-'))
        .flatMap((name) =>
          readFileSync(join(folder, name), 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as RuledEvent),
        )
    : [];

test('broadcast state is checkpointed and restored at another parallelism: stop at 2 with rules half in, resume at 3, exact output', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-broadcast-'));
  folders.push(folder);
  const events = 12_000;
  const rules = 20;
  Object.assign(process.env, { BR_OUTPUT: join(folder, 'out'), BR_EVENTS: String(events), BR_EVENT_RATE: '3000', BR_RULES: String(rules), BR_RULE_RATE: '8' });
  const config = (parallelism: number) => ({ parallelism, workers: 2, checkpointing: { interval: '100ms', storage: join(folder, 'checkpoints') } });

  const first = await startJob({ job: jobModule, config: config(2) });
  while (committed(join(folder, 'out')).length === 0) await sleep(50);
  const savepoint = await first.stopWithSavepoint();
  await first.result;
  const before = committed(join(folder, 'out'));
  const rulesBefore = new Set(before.map((event) => event.rule));
  assert.ok(rulesBefore.size > 0 && rulesBefore.size < rules, `the savepoint came while rules were arriving (${rulesBefore.size} of ${rules} seen)`);

  const second = await startJob({ job: jobModule, config: config(3), fromSavepoint: savepoint.location.path });
  await second.result;
  const output = committed(join(folder, 'out'));
  const seen = new Map<number, number>();
  for (const event of output) seen.set(event.seq, (seen.get(event.seq) ?? 0) + 1);
  assert.equal([...seen.values()].filter((copies) => copies > 1).length, 0, 'no event twice');
  assert.equal(seen.size, events, `every event once (${events - seen.size} missing: lost broadcast or keyed state)`);
  for (const event of output) assert.equal(event.value, event.seq * multiplierOf(event.rule), `event ${event.seq} got its rule's multiplier`);
  const afterRestore = output.slice(before.length).filter((event) => rulesBefore.has(event.rule));
  assert.ok(afterRestore.length > 0, 'events after the restore found rules that arrived before it, in the restored broadcast state');
  for (const name of ['BR_OUTPUT', 'BR_EVENTS', 'BR_EVENT_RATE', 'BR_RULES', 'BR_RULE_RATE']) delete process.env[name];
});
