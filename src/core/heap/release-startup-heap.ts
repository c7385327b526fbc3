import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type CollectGarbage = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Gives back the heap a thread grew while it started: one memory-reducing full garbage collection
 * (V8's last-resort flavour: it compacts, and shrinks the young generation back to its initial
 * size). On the main thread of `weir run`: loading the CLI, the client and the job grows its new
 * space to its limit (32 MB) and leaves start-up garbage in the old space, and the job master then
 * runs no records and allocates little, so without this it keeps about 30 MB of pages it no longer
 * needs for the job's whole life; called once, as the first attempt's workers start (it blocks the
 * main thread for a few tens of milliseconds while they load in parallel), and only for a process
 * the CLI owns: an application that embeds the job master decides about its own heap. In every
 * worker thread, once its tasks are built: what loading the job module left in its old space
 * (a few MB a worker), before the records flow. Synchronous: a few tens of milliseconds.
 */
export function releaseStartupHeap(): void {
  collector()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

let collect: CollectGarbage | undefined;

/** V8's gc() function: the global one when node runs with --expose-gc, else one taken from a context created while the flag is on. */
function collector(): CollectGarbage {
  if (collect !== undefined) return collect;
  const global = (globalThis as { gc?: CollectGarbage }).gc;
  if (global !== undefined) {
    collect = global;
    return collect;
  }
  setFlagsFromString('--expose-gc');
  try {
    collect = runInNewContext('gc') as CollectGarbage;
  } finally {
    // Back as it was: V8's code cache is keyed on its flags, and the job's workers may restart later.
    setFlagsFromString('--no-expose-gc');
  }
  return collect;
}
