#!/usr/bin/env node
// The `weir` command. In a checkout it runs the TypeScript sources directly (Node strips the
// types); an installed package runs the compiled dist/.
import { existsSync } from 'node:fs';
import module from 'node:module';
import { setFlagsFromString } from 'node:v8';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(`weir: Node.js >= 22.18 is required (this is ${process.version}).`);
  console.error('hint: install Node 24 LTS; in a checkout, `npm run weir -- <command>` installs it locally for you.');
  process.exit(1);
}

// libuv's thread pool, shared by every thread of the process: the disk state backend's base copies
// (lmdb's backup of a store, seconds to minutes at tens of millions of keys) each hold one of its
// threads, and file, crypto and DNS work queue behind them; 4 threads (libuv's default) would let
// four keyed subtasks' copies stall every other task's file writes. A UV_THREADPOOL_SIZE of the
// user's own wins. Set before anything uses the pool.
process.env.UV_THREADPOOL_SIZE ??= '16';

// V8's allocation-site pretenuring off, for every thread this process starts (set before any
// module compiles: V8's code cache is keyed on its flags, so every command sets the same). A
// stream processor's objects are records, short-lived by design; when a worker lags for a moment
// as it starts, its records outlive two minor collections, V8 then allocates what those sites make
// straight in the old generation, and a worker's old space grew by 40-50 MB that only a full
// collection gave back (the peak of 3 in 16 benchmark runs; docs/benchmarks.md). An explicit
// --allocation-site-pretenuring on node's command line wins (Node refuses it in NODE_OPTIONS).
if (!process.execArgv.some((option) => option.includes('allocation-site-pretenuring'))) {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

// External memory (ArrayBuffers: a snapshot's serialized pieces, network buffers) counted within V8's
// global heap limit (Node 24's V8 has the flag; 22 does not, and keeps its default). By default V8
// starts a full collection for each ~64 MB the external memory grows by: a heap snapshot of 10M keys
// (430 MB of buffers on a 1.3 GB heap) met eight atomic mark-compacts of 0.8-1.4 s each, which stood
// the task still. With it: none during that snapshot, 2x the records/s at 10M keys; the price is
// peak RSS where state is large (garbage buffers wait longer: 2.5 -> 3.3 GB at 10M keys, 0.7 -> 0.9-1.1
// GB at 1M, none seen with little state; docs/benchmarks.md). An explicit flag on node's command line wins.
if (major >= 24 && !process.execArgv.some((option) => option.includes('external-memory-accounted-in-global-limit'))) {
  setFlagsFromString('--external-memory-accounted-in-global-limit');
}

// Full collections do not compact the old generation (V8 still sweeps, and gives back pages left
// empty). With state on the heap the old generation is gigabytes, and compacting it (evacuating
// pages, then updating every pointer into them) is the longest stop there is: at 10M keys on the
// heap backend each major collection stood a task still 208-296 ms, without compaction 34-75 ms,
// records/s and peak RSS the same within the noise (and at 1M keys over 60 s of updates the same RSS:
// no fragmentation seen; docs/benchmarks.md). An explicit --compact on node's command line wins.
if (!process.execArgv.some((option) => /^--(no-)?compact(=|$)/.test(option))) {
  setFlagsFromString('--no-compact');
}

// Node's on-disk compile cache (the stripped TypeScript and V8's code cache): every worker thread
// loads the same modules again, about 0.3 s less each once the cache is warm. Workers inherit it
// through NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off.
const cache = module.enableCompileCache?.();
if (cache?.directory !== undefined && process.env.NODE_COMPILE_CACHE === undefined) process.env.NODE_COMPILE_CACHE = cache.directory;

const source = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/cli/main.js', import.meta.url);
await import(existsSync(source) ? source.href : compiled.href);
