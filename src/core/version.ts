import { readFileSync } from 'node:fs';

/** Weir's version, from its package.json. */
export const WEIR_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
