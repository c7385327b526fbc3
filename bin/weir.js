#!/usr/bin/env node
// The `weir` command. In a checkout it runs the TypeScript sources directly (Node strips the
// types); an installed package runs the compiled dist/.
import { existsSync } from 'node:fs';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`weir: Node.js >= 22.18 is required (this is ${process.version}).`);
  console.error('hint: install Node 24 LTS; in a checkout, `npm run weir -- <command>` installs it locally for you.');
  process.exit(1);
}

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/cli/main.js', import.meta.url);
await import(existsSync(source) ? source.href : compiled.href);
