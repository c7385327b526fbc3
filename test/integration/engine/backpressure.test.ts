/**
 * A slow sink slows the source: with credit-based flow control the records generated but not yet
 * consumed stay below a bound set by the channel credits and the batch size, whatever the input size.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runJob } from '../../../src/runtime/jobmaster/job-master.ts';

test('a deliberately slow sink keeps the records in flight bounded by credits x batch size', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-bp-'));
  try {
    const count = 100_000;
    process.env.BP_COUNT = String(count);
    process.env.BP_REPORT = join(folder, 'report.json');
    const batchSize = 256;
    const channelCredits = 2;
    await runJob({ job: join(import.meta.dirname, '..', '..', 'fixtures', 'jobs', 'backpressure-job.ts'), config: { workers: 1, batchSize, channelCredits } });
    const report = JSON.parse(await readFile(process.env.BP_REPORT, 'utf8')) as { generated: number; consumed: number; maxInFlight: number };
    assert.equal(report.generated, count);
    assert.equal(report.consumed, count);
    // In flight at most: the credits of the one channel, one batch over them, and the batch being emitted.
    const bound = (channelCredits + 2) * batchSize;
    assert.ok(report.maxInFlight > 0, 'the sink saw records in flight');
    assert.ok(report.maxInFlight <= bound, `at most ${bound} records in flight, saw ${report.maxInFlight} (of ${count})`);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
