import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

/** The client's modules that import its API barrel and that Weir loads: its connection and its SASL helpers. */
const IMPORTERS = ['network/connection.js', 'protocol/sasl/utils.js'];
/** The barrel's own files, small and exported whole (callbacks, definitions, enumerations, types). */
const GENERIC = /^export \* from "\.\/([\w-]+\.js)";$/gm;
/** The barrel's API groups (admin, consumer, metadata, producer, ...). */
const GROUP = /^export \* from "\.\/([\w-]+)\/index\.js";$/gm;
/** One API version in a group's barrel: `export * as produceV11 from "./produce-v11.js"`. */
const API = /^export \* as (\w+) from "\.\/([\w-]+\.js)";$/gm;
/** What an importer takes from the barrel: `import { a, b } from "../apis/index.js"`. */
const IMPORT = /import \{([^}]*)\} from "(?:\.\.\/)+apis\/index\.js"/g;
const TRIMMED_URL = 'weir:platformatic-kafka-apis';

/**
 * `@platformatic/kafka`'s connection imports its API barrel (apis/index.js): every version of
 * every Kafka API, about 270 modules and 2.4 MB of heap in every thread that opens a connection,
 * where Weir uses 26 of them. This gives the importers Weir loads (its connection and SASL helpers)
 * a barrel of just what they import, through a resolve hook on this thread, and returns the API
 * namespaces asked for (`apis`), each from its own file; every other importer, a job's own use of
 * the client included, still gets the whole barrel. It reads the package's barrels as text first
 * and changes nothing unless every name is found: then undefined, and the caller loads the barrel.
 */
export function trimApiBarrel(distUrl: URL, apis: readonly string[], load: (url: URL) => Record<string, unknown>): Record<string, unknown> | undefined {
  if (typeof registerHooks !== 'function') return undefined;
  const barrelUrl = new URL('apis/index.js', distUrl);
  const barrel = readFileSync(barrelUrl, 'utf8');
  const generic = [...barrel.matchAll(GENERIC)].map((match) => new URL(`apis/${match[1]}`, distUrl));
  const genericText = generic.map((url) => readFileSync(url, 'utf8')).join('\n');
  const files = new Map<string, URL>();
  for (const [, group] of barrel.matchAll(GROUP)) {
    const text = readFileSync(new URL(`apis/${group}/index.js`, distUrl), 'utf8');
    for (const [, name, file] of text.matchAll(API)) files.set(name as string, new URL(`apis/${group}/${file}`, distUrl));
  }
  const importers = IMPORTERS.map((path) => new URL(path, distUrl));
  const imported: string[] = [];
  for (const url of importers) {
    const text = readFileSync(url, 'utf8');
    const imports = [...text.matchAll(IMPORT)];
    // Every mention of the barrel must be a named import (not `import *`, not a re-export): else leave it whole.
    if (imports.length !== text.split('apis/index.js"').length - 1) return undefined;
    for (const match of imports) imported.push(...(match[1] as string).split(',').map((entry) => entry.trim().split(/\s+as\s+/)[0] as string));
  }
  const namespaces = [...new Set([...imported.filter((name) => files.has(name)), ...apis])];
  const fromGeneric = imported.filter((name) => !files.has(name) && name !== '');
  if (namespaces.some((name) => !files.has(name))) return undefined;
  if (fromGeneric.some((name) => !new RegExp(`export (?:function|const|class|let) ${name}\\b|export \\{[^}]*\\b${name}\\b`).test(genericText)))
    return undefined;

  const source = [
    ...generic.map((url) => `export * from ${JSON.stringify(url.href)};`),
    ...namespaces.map((name) => `export * as ${name} from ${JSON.stringify((files.get(name) as URL).href)};`),
  ].join('\n');
  const parents = new Set(importers.map((url) => url.href));
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      if (resolved.url !== barrelUrl.href || context.parentURL === undefined || !parents.has(context.parentURL)) return resolved;
      return { url: TRIMMED_URL, format: 'module', shortCircuit: true };
    },
    load(url, context, nextLoad) {
      return url === TRIMMED_URL ? { format: 'module', source, shortCircuit: true } : nextLoad(url, context);
    },
  });
  return Object.fromEntries(apis.map((name) => [name, load(files.get(name) as URL)]));
}
