import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defineJob } from '../../../../src/api/define-job.ts';
import { dataGenSource } from '../../../../src/connectors/datagen/datagen-source.ts';
import { kafkaSink } from '../../../../src/connectors/kafka/kafka-sink.ts';
import { parseEnvironmentConfig } from '../../../../src/core/config/environment-config.ts';
import type { ExclusiveClaim, Preflightable } from '../../../../src/core/connector/preflight.ts';
import type { Sink } from '../../../../src/core/connector/sink.ts';
import { buildStreamGraph } from '../../../../src/graph/job.ts';
import { buildJobGraph } from '../../../../src/graph/job-graph.ts';
import { runPreflight } from '../../../../src/runtime/jobmaster/run-preflight.ts';

function claimingSink(name: string, claim: (jobName: string, uid: string) => ExclusiveClaim[]): Sink<number> & Preflightable {
  return {
    name,
    deliveryGuarantee: 'at-least-once',
    createOperator: () => {
      throw new Error('not run');
    },
    exclusiveClaims: ({ jobName, uid }) => claim(jobName, uid),
  };
}

async function findingsOf(sinks: Sink<number>[], settings: object = {}) {
  const job = defineJob({
    name: 'claims',
    build(env) {
      const stream = env.fromSource(dataGenSource<number>({ count: 1, generate: () => 1 }));
      for (const [index, sink] of sinks.entries()) stream.sinkTo(sink, { uid: `out-${index}` });
    },
  });
  const config = parseEnvironmentConfig(settings);
  const graph = buildStreamGraph(job);
  return runPreflight(job.name, graph, buildJobGraph(job.name, graph, config), config);
}

test('two sinks of a job claiming the same transactional id prefix are refused, naming both, the prefix and the setting', async () => {
  const same = () => [{ what: 'transactional id prefix', name: 'p', setting: 'transactionalIdPrefix' }];
  const findings = await findingsOf([claimingSink('first', same), claimingSink('second', same)]);
  assert.equal(findings.length, 1);
  assert.equal(findings[0]?.level, 'error');
  assert.match(findings[0]?.message ?? '', /"first" and "second" use the same transactional id prefix "p"/);
  assert.match(findings[0]?.hint ?? '', /transactionalIdPrefix/);
});

test('distinct prefixes, also one the start of the other, are fine: no id of one parses as the other', async () => {
  const findings = await findingsOf([
    claimingSink('first', () => [{ what: 'transactional id prefix', name: 'p', setting: 'transactionalIdPrefix' }]),
    claimingSink('second', () => [{ what: 'transactional id prefix', name: 'p-x', setting: 'transactionalIdPrefix' }]),
    claimingSink('third', () => [{ what: 'transactional id prefix', name: 'p-0', setting: 'transactionalIdPrefix' }]),
  ]);
  assert.deepEqual(findings, []);
});

test('an exactly-once Kafka sink claims its transactional id prefix (the default one by job and uid); at-least-once claims none', () => {
  const explicit = kafkaSink<number>({
    topic: 't',
    bootstrap: '127.0.0.1:1',
    deliveryGuarantee: 'exactly-once',
    transactionalIdPrefix: 'orders-out',
    serializer: (value) => ({ value: String(value) }),
  });
  assert.deepEqual(explicit.exclusiveClaims?.({ jobName: 'j', uid: 'u' }), [
    { what: 'transactional id prefix', name: 'orders-out', setting: 'transactionalIdPrefix' },
  ]);
  const byDefault = kafkaSink<number>({
    topic: 't',
    bootstrap: '127.0.0.1:1',
    deliveryGuarantee: 'exactly-once',
    serializer: (value) => ({ value: String(value) }),
  });
  assert.equal(byDefault.exclusiveClaims?.({ jobName: 'j', uid: 'u' })[0]?.name, 'weir-j-u');
  const atLeastOnce = kafkaSink<number>({
    topic: 't',
    bootstrap: '127.0.0.1:1',
    deliveryGuarantee: 'at-least-once',
    serializer: (value) => ({ value: String(value) }),
  });
  assert.deepEqual(atLeastOnce.exclusiveClaims?.({ jobName: 'j', uid: 'u' }), []);
});

test('checkpointing.mode at-least-once with an exactly-once sink warns that the output, not only the state, may hold duplicates', async () => {
  // Records that overtake barrier N on a faster input reach the sink before its pre-commit of N:
  // they are in checkpoint N's transaction, committed, and read again after a restore from N.
  const exactlyOnce: Sink<number> = {
    name: 'eo',
    deliveryGuarantee: 'exactly-once',
    createOperator: () => {
      throw new Error('not run');
    },
  };
  const findings = await findingsOf([exactlyOnce], { checkpointing: { interval: '1s', mode: 'at-least-once', storage: '/tmp/unused' } });
  const warning = findings.find((finding) => finding.level === 'warning' && /at-least-once/.test(finding.message));
  assert.ok(warning, JSON.stringify(findings));
  assert.doesNotMatch(warning.message, /sinks commit exactly once/);
  assert.match(warning.message, /output of the exactly-once sinks may hold records twice/);
  assert.match(warning.hint ?? '', /checkpointing\.mode: 'exactly-once'/);
});
