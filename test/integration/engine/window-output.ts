/** Reads the committed output of a file sink (part files only) as JSON records. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export function readCommitted<T>(folder: string): T[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((name) => name.startsWith('part-'))
    .flatMap((name) =>
      readFileSync(join(folder, name), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as T),
    );
}

/** Records as sorted JSON lines, for order-free comparison. */
export function canonical(records: unknown[]): string[] {
  return records.map((record) => JSON.stringify(record, Object.keys(record as object).sort())).sort();
}
