import { WeirError } from '../../core/errors/weir-error.ts';

/**
 * Reads a Java `.properties` text (what Kafka's own clients take with `--command-config` or
 * `--consumer.config`): `key=value`, `key: value` or `key value` lines, `#` and `!` comments,
 * a trailing backslash continues a line, and `\t`, `\n`, `\uXXXX` and `\<char>` escapes.
 * Returns the keys in file order with the line each was on.
 */
export function parseProperties(text: string, file: string): Map<string, { value: string; line: number }> {
  const properties = new Map<string, { value: string; line: number }>();
  const lines = text.split(/\r\n|\r|\n/);
  for (let index = 0; index < lines.length; index++) {
    const first = index + 1;
    let logical = (lines[index] as string).replace(/^[ \t\f]+/, '');
    if (logical === '' || logical.startsWith('#') || logical.startsWith('!')) continue;
    while (endsWithOddBackslashes(logical) && index + 1 < lines.length) {
      index++;
      logical = logical.slice(0, -1) + (lines[index] as string).replace(/^[ \t\f]+/, '');
    }
    if (endsWithOddBackslashes(logical)) logical = logical.slice(0, -1);
    let cut = 0;
    while (cut < logical.length && !/[=:\s]/.test(logical[cut] as string)) cut += logical[cut] === '\\' ? 2 : 1;
    const key = unescapeProperty(logical.slice(0, cut), file, first);
    let rest = logical.slice(cut).replace(/^[ \t\f]*/, '');
    if (rest.startsWith('=') || rest.startsWith(':')) rest = rest.slice(1).replace(/^[ \t\f]*/, '');
    properties.set(key, { value: unescapeProperty(rest, file, first), line: first });
  }
  return properties;
}

function endsWithOddBackslashes(text: string): boolean {
  let count = 0;
  for (let at = text.length - 1; at >= 0 && text[at] === '\\'; at--) count++;
  return count % 2 === 1;
}

function unescapeProperty(text: string, file: string, line: number): string {
  return text.replace(/\\(u([0-9a-fA-F]{0,4})|.)/g, (match, escaped: string, hex: string | undefined) => {
    if (hex !== undefined) {
      if (hex.length !== 4) {
        throw new WeirError('INVALID_KAFKA_SETTINGS', `${file} line ${line}: "${match}" is not a \\uXXXX escape`, {
          hint: 'write four hex digits after \\u, or \\\\ for a backslash',
        });
      }
      return String.fromCharCode(Number.parseInt(hex, 16));
    }
    return escaped === 't' ? '\t' : escaped === 'n' ? '\n' : escaped === 'r' ? '\r' : escaped === 'f' ? '\f' : escaped;
  });
}
