/**
 * docs/configuration.md is generated from the option schemas (scripts/gen-config-reference.ts).
 * This fails when the file is not what the generator produces now: a schema, a description or a
 * `weir run` flag changed without the docs. Fix: node scripts/gen-config-reference.ts
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CONFIGURATION_DOC, generateConfigReference } from '../../../scripts/gen-config-reference.ts';
import { runCommand } from '../../../src/cli/commands/run.ts';

test('docs/configuration.md is what the generator produces from the schemas', () => {
  assert.equal(
    readFileSync(CONFIGURATION_DOC, 'utf8'),
    generateConfigReference(),
    'docs/configuration.md is stale: run `node scripts/gen-config-reference.ts` and commit the result',
  );
});

test('the reference lists every setting, connector option and weir run flag', () => {
  const doc = generateConfigReference();
  for (const setting of ['parallelism', 'maxParallelism', 'workers', 'checkpointing.interval', 'checkpointing.storage', 'restartStrategy.initialBackoff']) {
    assert.match(doc, new RegExp(`\\| \`${setting.replace('.', '\\.')}\`\\s`), setting);
  }
  for (const option of ['startingOffsets', 'partitionDiscoveryInterval', 'deliveryGuarantee', 'transactionTimeout', 'recoveryBudget']) {
    assert.match(doc, new RegExp(`\\| \`${option}\`\\s`), option);
  }
  for (const option of runCommand().options) assert.ok(doc.includes(`\`${option.long}`), `weir run ${option.long} is not in the reference`);
});

test("every weir run flag that mirrors a setting sits in that setting's row", () => {
  const doc = generateConfigReference();
  const rowOf = (setting: string) => doc.split('\n').find((line) => line.startsWith(`| \`${setting}\` `)) ?? '';
  assert.match(rowOf('checkpointing.interval'), /`--checkpoint-interval`/);
  assert.match(rowOf('checkpointing.tolerableFailures'), /`--tolerable-failures`/);
  assert.match(rowOf('maxParallelism'), /`--max-parallelism`/);
  assert.match(rowOf('restartStrategy.attempts'), /`--restart-attempts`/);
  assert.match(doc, /The first failure fails the job\. `weir run` flag: `--no-restart`\./);
});

test('durations show as durations, and a default that depends on the machine is described, not printed', () => {
  const doc = generateConfigReference();
  assert.match(doc, /\| `checkpointing\.timeout`\s+\| `duration`\s+\| `10m`/);
  assert.match(doc, /\| `transactionTimeout`\s+\| `duration`\s+\| `15m`/);
  assert.match(doc, /\| `workers`\s+\| `integer`\s+\| the number of cores/);
});
