import { readFileSync } from 'node:fs';

/** This process's anonymous resident memory now, in MB (Linux's RssAnon; 0 where /proc has none). */
export function rssAnonMb(): number {
  try {
    const match = /^RssAnon:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return match === null ? 0 : Number(match[1]) / 1024;
  } catch {
    return 0;
  }
}
