import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { Command } from 'commander';
import { WeirError } from '../../core/errors/weir-error.ts';
import { WEIR_VERSION } from '../../core/version.ts';
import { projectFiles } from '../project-template.ts';

/** `weir init [folder]`: a new project that runs (project-template.ts); never over files already there. */
export function initCommand(): Command {
  return new Command('init')
    .description('start a project of your own: a word-count job, its test, a tsconfig for Node type stripping, settings and a README')
    .argument('[folder]', 'where (created when missing; must be empty)', '.')
    .action(async (folder: string) => {
      const path = resolve(folder);
      if (existsSync(path) && readdirSync(path).length > 0) {
        throw new WeirError('INVALID_CONFIG', `${path} is not empty: weir init writes only into a new or empty folder`, {
          hint: 'give another folder, e.g. `weir init my-job`',
        });
      }
      const name =
        basename(path)
          .toLowerCase()
          .replace(/[^a-z0-9._-]+/g, '-')
          .replace(/^[._-]+/, '') || 'weir-job';
      await mkdir(path, { recursive: true });
      const files = projectFiles(name, WEIR_VERSION);
      for (const [file, text] of Object.entries(files)) await writeFile(join(path, file), text, { flag: 'wx' });
      console.log(`created ${name} in ${path}: ${Object.keys(files).join(', ')}`);
      console.log(
        `next: cd ${folder} && npm install (weir-streams is not on the npm registry yet: npm install <the weir-streams-${WEIR_VERSION}.tgz that npm pack writes in a clone of Weir>), then the README's three commands`,
      );
    });
}
