/** docs/architecture.md is the map of the code: its layers are the rules CI enforces, and every file it names exists. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..', '..', '..');
const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
const { LAYERS, RUNTIME_LAYERS } = (
  createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as { layers: { LAYERS: string[][]; RUNTIME_LAYERS: string[][] } }
).layers;

/** The rows of a fenced block, lowest first (the doc draws the highest row on top). */
function rowsOf(fence: string): string[][] {
  const block = new RegExp(`\`\`\`${fence}\\n([\\s\\S]*?)\`\`\``).exec(doc)?.[1];
  assert.ok(block !== undefined, `docs/architecture.md has a \`\`\`${fence} block`);
  return block
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .reverse();
}

function filesUnder(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [relative(join(root, 'src'), path)];
  });
}

test('the layers drawn in docs/architecture.md are the ones dependency-cruiser enforces', () => {
  assert.deepEqual(rowsOf('layers'), LAYERS);
  assert.deepEqual(rowsOf('runtime-layers'), RUNTIME_LAYERS);
});

test('every folder of src/ and of src/runtime/ is in a layer', () => {
  const folders = (path: string) => readdirSync(join(root, path)).filter((name) => statSync(join(root, path, name)).isDirectory());
  assert.deepEqual(folders('src').sort(), LAYERS.flat().sort());
  assert.deepEqual(folders('src/runtime').sort(), RUNTIME_LAYERS.flat().sort());
});

test('every source file docs/architecture.md names exists', () => {
  const files = filesUnder(join(root, 'src'));
  const named = [...doc.matchAll(/`([\w./-]+\.ts)`/g)].map((match) => match[1] as string);
  assert.ok(named.length > 100, `the map names the files (${named.length} found)`);
  const missing = named.filter((name) => !existsSync(join(root, name)) && !files.some((file) => file === name || file.endsWith(`/${name}`)));
  assert.deepEqual(missing, []);
});
