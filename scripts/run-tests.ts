/**
 * `npm test`: every unit and integration test file through `node --test`, the longest first.
 *
 * `node --test` starts the files in the order given, `--test-concurrency` at a time. Given the
 * longest first (each file's seconds in an earlier full run, from test/durations.json; a file the
 * table does not know counts as 30 s integration, 1 s unit), the last files to start are short
 * ones, so no long file starts late and runs alone at the end. Measured on full runs: the two
 * lanes were busy 1.55-1.57 on average with and without this order, so the order is not where the
 * time goes; most of the gap is each test file's own process starting (below).
 *
 * Every test file is a process of its own that loads the sources again: Node's compile cache
 * (NODE_COMPILE_CACHE, .weir/compile-cache unless set) keeps their stripped TypeScript and V8's
 * code between them (the unit tests: 40 s -> 35 s cold, 32 s warm; a quarter less CPU).
 *
 * Every run also writes what it measured to .weir/test-durations.json (a second reporter,
 * scripts/test-durations-reporter.ts); copy it over test/durations.json to refresh the order.
 * Arguments go to `node --test` (e.g. `--test-name-pattern`).
 */
import { spawn } from 'node:child_process';
import { globSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WEIR_V8_FLAGS } from './weir-v8-flags.ts';

const root = join(import.meta.dirname, '..');
const durations = JSON.parse(readFileSync(join(root, 'test', 'durations.json'), 'utf8')) as Record<string, number>;
const files = [...globSync('test/unit/**/*.test.ts', { cwd: root }), ...globSync('test/integration/**/*.test.ts', { cwd: root })].sort();
const seconds = (file: string) => durations[file] ?? (file.startsWith('test/integration/') ? 30 : 1);
const ordered = files.sort((a, b) => seconds(b) - seconds(a));
mkdirSync(join(root, '.weir'), { recursive: true });
const args = [
  // The V8 flags bin/weir.js sets in every weir process the tests start: V8's code cache is keyed on
  // the flags, so the tests' own processes share the compile cache with those.
  ...WEIR_V8_FLAGS,
  '--test',
  '--test-concurrency=2',
  '--test-timeout=1200000',
  '--test-global-setup=test/harness/global-setup.ts',
  '--test-reporter=spec',
  '--test-reporter-destination=stdout',
  '--test-reporter=./scripts/test-durations-reporter.ts',
  '--test-reporter-destination=.weir/test-durations.json',
  ...process.argv.slice(2),
  ...ordered,
];
const env = { ...process.env, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(root, '.weir', 'compile-cache') };
const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit', env });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)));
