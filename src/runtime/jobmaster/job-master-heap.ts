import { setFlagsFromString } from 'node:v8';

/**
 * The young generation of the job master's thread, and so of the workers it starts.
 *
 * The main thread of `weir run` is the job master: the checkpoint coordinator, the metrics, the
 * dashboard; it runs no records. V8 still grows its new space to 32 MB while the modules load (what
 * survives a scavenge makes it grow), and never shrinks it again: about 25 MB of a job's resident
 * memory at parallelism 1 for nothing (docs/benchmarks.md). V8 has no per-isolate setting for the
 * main thread after start, but the factor its new space grows by is read at each growth, so
 * {@link keepJobMasterYoungGenerationSmall}, called by `bin/weir.js` before the CLI's modules load,
 * sets it to 1: the main thread keeps V8's initial 1 MB semi-space.
 *
 * That flag is the process's, so a worker's new space could not grow either: a worker therefore
 * starts at its full young generation (`--min-semi-space-size`, read when an isolate is made, so
 * the main thread's own heap keeps its size), which a worker grows to within its first second of
 * records anyway; V8 never shrinks a new space below the size it started at. A job whose
 * `workerHeap.youngGenerationMb` is not the default sets its own before its workers start
 * ({@link startWorkersAtFullYoungGeneration}). A main thread that does run records (a cluster
 * member's tasks) turns the growth back on with {@link restoreYoungGenerationGrowth}.
 */

/** V8's own factor (flag-definitions.h: semi_space_growth_factor). */
const V8_GROWTH_FACTOR = 2;

/** `workerHeap.youngGenerationMb`'s default (environment-config.ts; a unit test keeps the two equal). */
export const DEFAULT_YOUNG_GENERATION_MB = 48;

let small = false;
let workerSemiSpaceMb: number | undefined;

/** V8 splits a young generation in three: two semi-spaces and the new space's large objects. */
function semiSpaceMb(youngGenerationMb: number): number {
  return Math.max(1, Math.floor(youngGenerationMb / 3));
}

/**
 * The main thread's new space stops growing (and every later isolate's: see above), and workers
 * start at the default young generation's semi-space. Both flags at once, before any module loads:
 * V8's code cache (Node's compile cache, which the threads share) is only valid under the flags it
 * was made with, so the main thread and the workers must compile under the same ones.
 */
export function keepJobMasterYoungGenerationSmall(): void {
  workerSemiSpaceMb = semiSpaceMb(DEFAULT_YOUNG_GENERATION_MB);
  setFlagsFromString(`--semi-space-growth-factor=1 --min-semi-space-size=${workerSemiSpaceMb}`);
  small = true;
}

/** For a main thread that runs records after all (cluster mode): new spaces grow again as V8 decides. */
export function restoreYoungGenerationGrowth(): void {
  if (!small) return;
  setFlagsFromString(`--semi-space-growth-factor=${V8_GROWTH_FACTOR}`);
  small = false;
}

/**
 * Every worker started from now on begins with the semi-space its young generation of
 * `youngGenerationMb` allows. Only while the main thread's growth is off (otherwise workers grow
 * as V8 decides), and the flag is set only when it changes, for the code cache's sake.
 */
export function startWorkersAtFullYoungGeneration(youngGenerationMb: number): void {
  if (!small) return;
  const mb = semiSpaceMb(youngGenerationMb);
  if (mb === workerSemiSpaceMb) return;
  setFlagsFromString(`--min-semi-space-size=${mb}`);
  workerSemiSpaceMb = mb;
}
