/** The first fetch of Apache Kafka through Maven says how far it is, every 2 s (a stand-in `mvn` prints Maven's download lines). */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { resolveKafkaDistribution } from '../../../src/local-kafka/kafka-classpath.ts';

test('a first fetch reports the files and megabytes fetched while Maven runs, then the total', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-fetch-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const jar = join(folder, 'kafka.jar');
  await writeFile(jar, '');
  // Maven's own lines, spread over 5 s: 3 files of 512 kB, then one of 2 MB.
  await writeFile(
    join(folder, 'mvn'),
    `#!/bin/sh
[ "$1" = "-v" ] && { echo "Apache Maven 3.9.9"; exit 0; }
for arg in "$@"; do case "$arg" in -Dmdep.outputFile=*) out="\${arg#-Dmdep.outputFile=}";; esac; done
for i in 1 2 3; do echo "Downloaded from central: https://repo.maven.apache.org/maven2/a/a$i.jar (512 kB at 1.0 MB/s)"; sleep 1; done
echo "Downloaded from central: https://repo.maven.apache.org/maven2/kafka.jar (2.0 MB at 3.0 MB/s)"
sleep 2
printf '%s' "${jar}" > "$out"
`,
  );
  await chmod(join(folder, 'mvn'), 0o755);
  const path = process.env.PATH;
  process.env.PATH = `${folder}:${path}`;
  const lines: string[] = [];
  try {
    const distribution = await resolveKafkaDistribution((line) => lines.push(line), join(folder, 'cache'));
    assert.equal(distribution.classpath, jar);
  } finally {
    process.env.PATH = path;
  }
  assert.match(lines[0] ?? '', /^fetching Apache Kafka .* from Maven Central \(first use only\)\.\.\.$/);
  assert.ok(
    lines.some((line) => /^ {2}\d files fetched \(\d+\.\d MB\)\.\.\.$/.test(line)),
    lines.join('\n'),
  );
  assert.equal(lines.at(-1), '  fetched 4 files (3.5 MB)');
  // The cached classpath is used from then on: no Maven, no lines.
  const again: string[] = [];
  await resolveKafkaDistribution((line) => again.push(line), join(folder, 'cache'));
  assert.deepEqual(again, []);
});
