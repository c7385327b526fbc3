import { fileURLToPath } from 'node:url';

/** Weir's own code: frames there are the engine's, not the job's (src/demo is a job, so it is not listed). */
const ENGINE_FOLDERS = ['core', 'state', 'graph', 'checkpoint', 'runtime', 'connectors', 'api', 'web', 'cli', 'audit', 'local-kafka'].map((folder) =>
  fileURLToPath(new URL(`../../${folder}/`, import.meta.url)),
);

const MAX_FRAMES = 5;

/**
 * The frames of a stack that are the job's own code (the job module and what it imports, not
 * Weir's engine, node's internals or node_modules), at most five, each as V8 prints it
 * ("at fn (file:///.../job.ts:12:15)"). Empty when there is none.
 */
export function userCodeFrames(stack: string | undefined): string[] {
  if (stack === undefined) return [];
  const frames: string[] = [];
  for (const line of stack.split('\n')) {
    const frame = line.trim();
    if (!frame.startsWith('at ')) continue;
    if (frame.includes('node:') || frame.includes('/node_modules/') || frame.includes('<anonymous>')) continue;
    const path = /(?:file:\/\/)?(\/[^:()]+):\d+:\d+\)?$/.exec(frame)?.[1];
    if (path === undefined) continue;
    const file = decodeURIComponent(path);
    if (ENGINE_FOLDERS.some((folder) => file.startsWith(folder))) continue;
    frames.push(frame);
    if (frames.length === MAX_FRAMES) break;
  }
  return frames;
}

/** A user error's message with where in the job it was thrown: "boom\n    at fn (file:///.../job.ts:12:15)". */
export function withUserCodeLocation(message: string, stack: string | undefined): string {
  const frames = userCodeFrames(stack);
  return frames.length === 0 ? message : `${message}\n${frames.map((frame) => `    ${frame}`).join('\n')}`;
}
