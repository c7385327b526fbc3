import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withUserCodeLocation } from '../../core/errors/user-code-location.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { isJob, type Job } from '../../graph/job.ts';
import { syntaxErrorLocation } from './syntax-error-location.ts';

/**
 * Imports a job module and returns its job; a module without one is a clear error. A syntax error
 * names its file, line and column; an error the module throws while it loads keeps where in the
 * job it was thrown.
 */
export async function loadJobModule(url: string): Promise<Job> {
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const location = syntaxErrorLocation(error, url);
    if (location !== undefined) {
      throw new WeirError(
        'JOB_MODULE_FAILED',
        `syntax error in the job module at ${location.file}:${location.line}:${location.column}: ${message}\n    ${location.source.trim()}`,
        { hint: commonJsHint(message, location.file) ?? `fix line ${location.line}, column ${location.column} of ${location.file}`, cause: error },
      );
    }
    throw new WeirError(
      'JOB_MODULE_FAILED',
      `cannot load the job module ${url}: ${withUserCodeLocation(message, error instanceof Error ? error.stack : undefined)}`,
      {
        hint: 'check the path and that the module runs on its own (`node <file>`)',
        cause: error,
      },
    );
  }
  const job = module.default;
  if (!isJob(job)) {
    throw new WeirError('NOT_A_JOB', `the module ${url} does not export a job`, {
      hint: "make its default export `defineJob({ name, build(env) { ... } })` from 'weir-streams'",
    });
  }
  return job;
}

/**
 * The hint for an ES module loaded as CommonJS (`import` or `export` refused "outside a module"):
 * Node takes a `.ts` or `.js` file for CommonJS unless the nearest package.json says
 * `"type": "module"` (what `npm init -y` leaves out).
 */
function commonJsHint(message: string, file: string): string | undefined {
  if (!/Cannot use import statement outside a module|Unexpected token 'export'/.test(message)) return undefined;
  const path = file.startsWith('file:') ? fileURLToPath(file) : file;
  if (/\.(mts|mjs)$/.test(path)) return undefined;
  let packageJson: string | undefined;
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    if (existsSync(join(folder, 'package.json'))) {
      packageJson = join(folder, 'package.json');
      break;
    }
    if (dirname(folder) === folder) break;
  }
  const type = packageJson === undefined ? undefined : packageTypeOf(packageJson);
  const where =
    packageJson === undefined
      ? `no package.json above ${path} says "type": "module"`
      : `${packageJson} ${type === undefined ? 'has no "type"' : `says "type": ${JSON.stringify(type)}`}`;
  return (
    `the job module is loaded as CommonJS, so its import statements are refused (${where}): ` +
    `add "type": "module" to ${packageJson ?? 'a package.json in its folder'}, or name the file ${path.replace(/\.(ts|js)$/, (ext) => (ext === '.ts' ? '.mts' : '.mjs'))}`
  );
}

function packageTypeOf(packageJson: string): unknown {
  try {
    return (JSON.parse(readFileSync(packageJson, 'utf8')) as { type?: unknown }).type;
  } catch {
    return undefined;
  }
}
