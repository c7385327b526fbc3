import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPOSITORY = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const DEPCRUISE = join(REPOSITORY, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');
const CONFIG = join(REPOSITORY, '.dependency-cruiser.cjs');

interface Run {
  code: number;
  output: string;
}

/** Runs depcruise on `src` with the repository's rules, as `npm run lint` does, in `cwd`. */
function depcruise(cwd: string, ...extra: string[]): Promise<Run> {
  return new Promise((resolvePromise) => {
    execFile(
      process.execPath,
      [DEPCRUISE, '--config', '.dependency-cruiser.cjs', ...extra, 'src'],
      { cwd, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolvePromise({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** A tree of files under a temporary folder, with the repository's dependency-cruiser config. */
async function plant(t: TestContext, files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'weir-layering-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  await copyFile(CONFIG, join(root, '.dependency-cruiser.cjs'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}

test('an upward import and a cycle fail the check, naming the files and the rules', async (t) => {
  const root = await plant(t, {
    'src/core/a.ts': "import { b } from '../api/b.ts';\nexport const a = b + 1;\n",
    'src/api/b.ts': 'export const b = 1;\n',
    'src/state/x.ts': "import { y } from './y.ts';\nexport const x = () => y;\n",
    'src/state/y.ts': "import { x } from './x.ts';\nexport const y = () => x;\n",
  });
  const { code, output } = await depcruise(root);
  assert.notEqual(code, 0, output);
  assert.match(output, /layer-core: src\/core\/a\.ts → src\/api\/b\.ts/);
  assert.match(output, /no-circular: src\/state\/(x|y)\.ts/);
  assert.match(output, /src\/state\/x\.ts/);
  assert.match(output, /src\/state\/y\.ts/);
});

test('a type-only upward import fails the check too', async (t) => {
  const root = await plant(t, {
    'src/core/a.ts': "import type { B } from '../api/b.ts';\nexport const a: B | undefined = undefined;\n",
    'src/api/b.ts': 'export interface B {\n  b: number;\n}\n',
  });
  const { code, output } = await depcruise(root);
  assert.notEqual(code, 0, output);
  assert.match(output, /layer-core: src\/core\/a\.ts → src\/api\/b\.ts/);
});

test('two folders importing each other through different files fail the check', async (t) => {
  const root = await plant(t, {
    'src/core/a/x.ts': "import { y } from '../b/y.ts';\nexport const x = y;\n",
    'src/core/a/w.ts': 'export const w = 1;\n',
    'src/core/b/y.ts': 'export const y = 1;\n',
    'src/core/b/z.ts': "import { w } from '../a/w.ts';\nexport const z = w;\n",
  });
  const { code, output } = await depcruise(root);
  assert.notEqual(code, 0, output);
  assert.match(output, /no-circular-folders: src\/core\/(a|b)/);
});

test('imports that follow the layers pass the check', async (t) => {
  const root = await plant(t, {
    'src/api/b.ts': "import { a } from '../core/a.ts';\nexport const b = a + 1;\n",
    'src/core/a.ts': 'export const a = 1;\n',
  });
  const { code, output } = await depcruise(root);
  assert.equal(code, 0, output);
});

test('the repository’s src/ breaks no layering rule and has no import cycle', async () => {
  const { output } = await depcruise(REPOSITORY, '--output-type', 'json');
  const result = JSON.parse(output) as {
    summary: { violations: { from: string; to: string; rule: { name: string } }[]; totalCruised: number };
  };
  assert.ok(result.summary.totalCruised > 100, 'the whole of src/ was cruised');
  assert.deepEqual(
    result.summary.violations.map((violation) => `${violation.rule.name}: ${violation.from} → ${violation.to}`),
    [],
  );
});
