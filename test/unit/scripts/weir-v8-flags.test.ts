/**
 * scripts/weir-v8-flags.ts lists the V8 flags bin/weir.js sets, for the processes that run Weir
 * without it (the test runner, the benchmarks): the two must stay the same, and a flag given on
 * node's command line either way wins over the list.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { WEIR_V8_FLAGS, weirV8Flags } from '../../../scripts/weir-v8-flags.ts';

test('bin/weir.js sets every flag of WEIR_V8_FLAGS', () => {
  const bin = readFileSync(join(import.meta.dirname, '..', '..', '..', 'bin', 'weir.js'), 'utf8');
  for (const flag of WEIR_V8_FLAGS) assert.ok(bin.includes(`setFlagsFromString('${flag}')`), `bin/weir.js does not set ${flag}`);
  assert.ok(WEIR_V8_FLAGS.includes('--no-compact'));
});

test('a flag on the command line, either way, wins; another flag that merely contains its name does not', () => {
  assert.ok(!weirV8Flags(['--compact']).includes('--no-compact'));
  assert.ok(!weirV8Flags(['--no-compact']).includes('--no-compact'));
  assert.ok(!weirV8Flags(['--allocation_site_pretenuring']).includes('--no-allocation-site-pretenuring'));
  assert.ok(weirV8Flags(['--gc-experiment-less-compaction', '--compact-code-space']).includes('--no-compact'));
  assert.deepEqual(weirV8Flags([]), [...WEIR_V8_FLAGS]);
});
