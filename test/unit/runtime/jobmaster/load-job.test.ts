import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import type { EnvironmentConfigInput } from '../../../../src/core/config/environment-config.ts';
import { loadJob } from '../../../../src/runtime/jobmaster/load-job.ts';

const job = join(import.meta.dirname, '..', '..', '..', 'fixtures', 'jobs', 'debloat-job.ts');

test('loadJob: options over the config file over the job, checkpointing and cluster merged setting by setting', async () => {
  const loaded = await loadJob({
    job,
    configFile: {
      path: 'weir.json',
      config: { parallelism: 3, checkpointing: { interval: 5000, storage: '/tmp/a' }, cluster: { id: 'file-id', threads: 3, keyedTasks: 4 } },
    },
    // What `weir run --cluster c1 --checkpoint-interval 1s` gives: its own cluster and checkpointing objects.
    // (`weir run` builds its checkpointing setting by setting too, and casts it the same way.)
    config: { checkpointing: { interval: 1000 } as EnvironmentConfigInput['checkpointing'], cluster: { id: 'c1' } },
  });
  assert.equal(loaded.config.parallelism, 3);
  assert.equal(loaded.config.checkpointing?.interval, 1000);
  assert.equal(loaded.config.checkpointing?.storage, '/tmp/a', 'the file’s checkpoint storage stays');
  assert.equal(loaded.config.cluster?.id, 'c1');
  assert.equal(loaded.config.cluster?.threads, 3, 'the file’s cluster.threads stays under --cluster');
  assert.equal(loaded.config.cluster?.keyedTasks, 4, 'and its cluster.keyedTasks');
});
