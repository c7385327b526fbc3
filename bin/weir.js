#!/usr/bin/env node
// The `weir` command. In a checkout it runs the TypeScript sources directly (Node strips the
// types); an installed package runs the compiled dist/.
import { existsSync } from 'node:fs';
import module from 'node:module';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`weir: Node.js >= 22.18 is required (this is ${process.version}).`);
  console.error('hint: install Node 24 LTS; in a checkout, `npm run weir -- <command>` installs it locally for you.');
  process.exit(1);
}

// Node's on-disk compile cache (the stripped TypeScript and V8's code cache): every worker thread
// loads the same modules again, about 0.3 s less each once the cache is warm. Workers inherit it
// through NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
const cache = module.enableCompileCache?.();
if (cache?.directory !== undefined && process.env.NODE_COMPILE_CACHE === undefined) process.env.NODE_COMPILE_CACHE = cache.directory;

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/cli/main.js', import.meta.url);
await import(existsSync(source) ? source.href : compiled.href);
