/**
 * A `node --test` reporter: each test file's seconds (the sum of its top-level tests), as the JSON
 * scripts/run-tests.ts orders the files by (test/durations.json). An event names the file that
 * called `test()`: tests a shared helper defines for several files are left out.
 */
import { relative } from 'node:path';

interface TestEvent {
  type: string;
  data: { file?: string; nesting?: number; details?: { duration_ms?: number } };
}

export default async function* testDurations(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const seconds = new Map<string, number>();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { file, nesting, details } = event.data;
    if (file === undefined || nesting !== 0 || !file.endsWith('.test.ts')) continue;
    const name = relative(process.cwd(), file);
    seconds.set(name, (seconds.get(name) ?? 0) + (details?.duration_ms ?? 0) / 1000);
  }
  const sorted = [...seconds].sort(([a], [b]) => (a < b ? -1 : 1)).map(([file, value]) => [file, Math.round(value * 10) / 10]);
  yield `${JSON.stringify(Object.fromEntries(sorted), null, 1)}\n`;
}
