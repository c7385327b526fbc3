import { readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

/** What the connection takes from the protocol barrel: `import { saslPlain, ... } from "../protocol/index.js"`. */
const PROTOCOL_IMPORT = /import \{([^}]*)\} from "\.\.\/protocol\/index\.js"/;
/** A namespace in that barrel: `export * as saslPlain from "./sasl/plain.js"`. */
const NAMESPACE = /^export \* as (\w+) from "\.\/([\w/-]+\.js)";$/gm;
/** What the connection takes from the client options: its name and version, for ApiVersions. */
const OPTIONS_IMPORT = 'import { clientSoftwareName, clientSoftwareVersion } from "../clients/base/options.js"';
const CLIENT_NAME = /^export const clientSoftwareName = '([\w.-]+)';$/m;
const CLIENT_VERSION = /^import \{ version \} from "\.\.\/\.\.\/version\.js";$[\s\S]*^export const clientSoftwareVersion = version;$/m;

/**
 * `@platformatic/kafka`'s connection imports two modules for a few names each: the protocol
 * barrel for its SASL helpers (the barrel also loads murmur2 and its LRU library, about 50
 * modules) and the client options for the client's name and version (which compile two option
 * schemas with ajv as they load, about 45 ms). This gives the connection just those names, through
 * a resolve hook on this thread; every other importer gets the modules whole. It reads the files
 * as text first and redirects only what it fully recognizes; a later layout is left alone.
 */
export function trimConnectionImports(distUrl: URL): void {
  if (typeof registerHooks !== 'function') return;
  const connectionUrl = new URL('network/connection.js', distUrl);
  const connection = readFileSync(connectionUrl, 'utf8');
  const redirects = new Map<string, { url: string; source: string }>();

  const protocolImport = PROTOCOL_IMPORT.exec(connection);
  const protocolUrl = new URL('protocol/index.js', distUrl);
  if (protocolImport !== null && connection.split('protocol/index.js"').length === 2) {
    const names = (protocolImport[1] as string).split(',').map((name) => name.trim());
    const files = new Map([...readFileSync(protocolUrl, 'utf8').matchAll(NAMESPACE)].map(([, name, file]) => [name as string, file as string]));
    if (names.every((name) => files.has(name))) {
      const source = names.map((name) => `export * as ${name} from ${JSON.stringify(new URL(`protocol/${files.get(name)}`, distUrl).href)};`).join('\n');
      redirects.set(protocolUrl.href, { url: 'weir:platformatic-kafka-protocol', source });
    }
  }

  const optionsUrl = new URL('clients/base/options.js', distUrl);
  if (connection.includes(OPTIONS_IMPORT)) {
    const options = readFileSync(optionsUrl, 'utf8');
    const name = CLIENT_NAME.exec(options);
    if (name !== null && CLIENT_VERSION.test(options)) {
      const version = new URL('version.js', distUrl).href;
      const source = `export const clientSoftwareName = ${JSON.stringify(name[1])};\nexport { version as clientSoftwareVersion } from ${JSON.stringify(version)};`;
      redirects.set(optionsUrl.href, { url: 'weir:platformatic-kafka-client-name', source });
    }
  }
  if (redirects.size === 0) return;

  const sources = new Map([...redirects.values()].map(({ url, source }) => [url, source]));
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context);
      const redirect = context.parentURL === connectionUrl.href ? redirects.get(resolved.url) : undefined;
      return redirect === undefined ? resolved : { url: redirect.url, format: 'module', shortCircuit: true };
    },
    load(url, context, nextLoad) {
      const source = sources.get(url);
      return source === undefined ? nextLoad(url, context) : { format: 'module', source, shortCircuit: true };
    },
  });
}
