import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { fileURLToPath } from 'node:url';

/** Where a syntax error is: file, line and column (1-based), and the line itself. */
export interface SyntaxErrorLocation {
  file: string;
  line: number;
  column: number;
  source: string;
}

/**
 * Where the SyntaxError an `import()` of a job module threw is. Node's type stripping puts it in
 * the stack's header ("file:line", the source lines and a caret), but V8's own SyntaxError from an
 * ES module says only what is wrong, not where: then the job file is checked again with
 * `node --check` (after stripping its types, which keeps every position), whose message has it.
 * undefined when neither says (the error is in a module the job file imports, say).
 */
export function syntaxErrorLocation(error: unknown, moduleUrl: string): SyntaxErrorLocation | undefined {
  if (!(error instanceof SyntaxError)) return undefined;
  const fromStack = caretLocation(error.stack ?? '', /^(?:file:\/\/)?(\/[^\n]*?):(\d+)\n/);
  if (fromStack !== undefined) return fromStack;
  if (!moduleUrl.startsWith('file:')) return undefined;
  const file = fileURLToPath(moduleUrl);
  try {
    let source = readFileSync(file, 'utf8');
    if (/\.[mc]?ts$/.test(file)) source = stripTypeScriptTypes(source);
    const checked = spawnSync(process.execPath, ['--input-type=module', '--check', '-'], { input: source, encoding: 'utf8', timeout: 30_000 });
    const location = caretLocation(checked.stderr ?? '', /^\[stdin\]:(\d+)\n/, file);
    return location;
  } catch {
    return undefined;
  }
}

/**
 * Reads "file:line" (or "[stdin]:line") then the source lines with a caret under the error's
 * column, as node prints a syntax error.
 */
function caretLocation(text: string, header: RegExp, file?: string): SyntaxErrorLocation | undefined {
  const match = header.exec(text);
  if (match === null) return undefined;
  const line = Number(file === undefined ? match[2] : match[1]);
  const lines = text.slice(match[0].length).split('\n');
  const caret = lines.findIndex((entry) => /^\s*\^+\s*$/.test(entry));
  if (caret < 1) return undefined;
  return { file: file ?? decodeURIComponent(match[1] as string), line, column: (lines[caret] as string).indexOf('^') + 1, source: lines[caret - 1] as string };
}
