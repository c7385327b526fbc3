/** The npm package: named weir-streams, its `weir` command, a current dist/ built by prepack, the license and the broker's POM in the tarball. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { repositoryRoot } from '../../harness/cli.ts';

test('npm pack ships what an install needs under the name weir-streams, and builds dist/ first (prepack)', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'weir-pack-'));
  try {
    // --ignore-scripts: the new-project test runs the real prepack; two builds writing dist/ at once would race.
    const { stdout } = await promisify(execFile)('npm', ['pack', '--json', '--dry-run', '--ignore-scripts', '--pack-destination', folder], {
      cwd: repositoryRoot,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, PATH: `${join(process.execPath, '..')}:${process.env.PATH}` },
    });
    const [packed] = JSON.parse(stdout) as { name: string; filename: string; files: { path: string }[] }[];
    assert.equal(packed?.name, 'weir-streams');
    const files = new Set(packed?.files.map((file) => file.path));
    for (const path of [
      'dist/index.js',
      'dist/testing/job-test-driver.js',
      'dist/cli/main.js',
      'bin/weir.js',
      'kafka/pom.xml',
      'LICENSE',
      'package.json',
      'README.md',
    ]) {
      assert.ok(files.has(path), `${path} is in the package`);
    }
    assert.ok(![...files].some((path) => path.startsWith('test/') || path.startsWith('src/')), 'no tests or sources');
    const manifest = JSON.parse(await readFile(join(repositoryRoot, 'package.json'), 'utf8')) as {
      exports: Record<string, string>;
      bin: Record<string, string>;
      scripts: Record<string, string>;
    };
    assert.deepEqual(Object.keys(manifest.bin), ['weir']);
    assert.deepEqual(manifest.exports, { '.': './dist/index.js', './testing': './dist/testing/job-test-driver.js' }, 'the API and the test driver');
    assert.match(manifest.scripts.prepack ?? '', /tsc -p tsconfig\.build\.json/);
    assert.match(await readFile(join(repositoryRoot, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0/);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
