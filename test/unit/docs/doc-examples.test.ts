/**
 * The examples in the docs compile (and the tests among them run): a code block that starts with
 * `// examples/<file>.ts` or `// test/<path>.ts` is that file (which the typecheck covers), with the
 * imports a project has ('weir-streams' for src/index.ts, 'weir-streams/testing' for the test
 * driver, './<name>.ts' for an example job), and nothing else differs but the formatter's line
 * breaks (the shorter import paths fit on fewer lines).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';

const root = join(import.meta.dirname, '..', '..', '..');

/** Code with its line breaks and the formatter's trailing commas taken out: what stays is what the code says. */
function formatted(code: string): string {
  return code
    .replace(/\s+/g, ' ')
    .replace(/,\s*([}\])])/g, ' $1')
    .replace(/([{[(])\s+/g, '$1')
    .replace(/\s+([}\])])/g, '$1');
}

/** A file of this repository's imports as a project's: the package's entry points, an example job next to the file. */
function asInAProject(source: string): string {
  return source
    .replaceAll(/'(?:\.\.\/)+src\/index\.ts'/g, "'weir-streams'")
    .replaceAll(/'(?:\.\.\/)+src\/testing\/job-test-driver\.ts'/g, "'weir-streams/testing'")
    .replaceAll(/'(?:\.\.\/)+examples\/([\w-]+)\.ts'/g, "'./$1.ts'");
}

test('every docs code block that names an example file is that file, word for word', async () => {
  let blocks = 0;
  for (const doc of await readdir(join(root, 'docs'))) {
    if (!doc.endsWith('.md')) continue;
    const text = await readFile(join(root, 'docs', doc), 'utf8');
    for (const match of text.matchAll(/```ts\n(\/\/ ((?:examples|test)\/[\w/.-]+?\.ts)[^\n]*\n[\s\S]*?)```/g)) {
      const [, block, file] = match as unknown as [string, string, string];
      const source = await readFile(join(root, file), 'utf8');
      const expected = asInAProject(source);
      assert.equal(formatted(block), formatted(expected), `${doc}: the block of ${file} differs from the file (copy the file into the doc)`);
      blocks++;
    }
  }
  assert.ok(blocks >= 2, 'the docs show the example files');
});
