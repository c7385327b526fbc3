/**
 * The per-record cost of keyed state, backend against backend (issue 34): no job, one backend
 * over every key group, a small object per key in ValueState ({ count, sum, last }). Fills N keys,
 * then reads and writes random keys (a running sum: value() then update()), then takes a
 * snapshot (its synchronous part and the whole of it) and restores it into a new backend.
 * Each backend runs in a process of its own (its own peak RSS).
 *
 *   node bench/state-micro.ts [--keys 1000000] [--ops 1000000] [--backend heap,disk] [--write-buffer 8192] [--write-map]
 * (`--write-map`: the disk backend's lmdb with its write map, which Weir leaves off: lmdb-store.ts says why.)
 * (npm run bench:state -- --micro passes its flags on.)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { valueState } from '../src/core/state/state-descriptors.ts';
import { HeapKeyedStateBackend } from '../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../src/state/key-group-range.ts';
import { LmdbKeyedStateBackend } from '../src/state/lmdb-keyed-state-backend.ts';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    ops: { type: 'string', default: '1000000' },
    backend: { type: 'string', default: 'heap,disk' },
    'write-buffer': { type: 'string' },
    'write-map': { type: 'boolean', default: false },
    one: { type: 'string' },
    micro: { type: 'boolean', default: false },
    label: { type: 'string' },
    seconds: { type: 'string' },
  },
});
const keys = Number(values.keys);
const ops = Number(values.ops);

interface MicroResult {
  backend: string;
  fillNsPerRecord: number;
  getPutNsPerRecord: number;
  snapshotSyncMs: number;
  snapshotMs: number;
  snapshotMb: number;
  restoreMs: number;
  peakRssMb: number;
}

function run(backendName: string): MicroResult {
  const folder = mkdtempSync(join(tmpdir(), 'weir-bench-micro-'));
  const make = (sub: string) =>
    backendName === 'disk'
      ? new LmdbKeyedStateBackend({
          maxParallelism: 128,
          keyGroupRange: keyGroupRange(0, 127),
          operatorName: 'bench',
          dir: join(folder, sub),
          settings: {
            ...(values['write-buffer'] === undefined ? {} : { writeBufferEntries: Number(values['write-buffer']) }),
            ...(values['write-map'] === true ? { useWritemap: true } : {}),
          },
        })
      : new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(0, 127), operatorName: 'bench' });
  try {
    const backend = make('a');
    const state = backend.getState(valueState<{ count: number; sum: number; last: number }>('stats'));
    let started = performance.now();
    for (let i = 0; i < keys; i++) {
      backend.setCurrentKey(`user-${i}`);
      state.update({ count: 1, sum: i, last: i });
    }
    const fillNsPerRecord = ((performance.now() - started) * 1e6) / keys;
    let seed = 42;
    started = performance.now();
    for (let i = 0; i < ops; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      backend.setCurrentKey(`user-${seed % keys}`);
      const current = state.value();
      state.update(current === undefined ? { count: 1, sum: i, last: i } : { count: current.count + 1, sum: current.sum + i, last: i });
    }
    const getPutNsPerRecord = ((performance.now() - started) * 1e6) / ops;
    started = performance.now();
    const writer = backend.snapshotAsync();
    const snapshotSyncMs = performance.now() - started;
    writer.runToEnd();
    const snapshot = writer.result();
    const snapshotMs = performance.now() - started;
    started = performance.now();
    const restored = make('b');
    restored.restore([snapshot]);
    const restoreMs = performance.now() - started;
    return {
      backend: backendName,
      fillNsPerRecord,
      getPutNsPerRecord,
      snapshotSyncMs,
      snapshotMs,
      snapshotMb: snapshot.byteLength / 1e6,
      restoreMs,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

if (values.one !== undefined) {
  process.stdout.write(`${JSON.stringify(run(values.one))}\n`);
  process.exit(0);
}

const rows: string[] = [];
for (const backend of values.backend.split(',')) {
  const child = spawnSync(
    process.execPath,
    [
      ...process.execArgv,
      import.meta.filename,
      '--one',
      backend,
      '--keys',
      String(keys),
      '--ops',
      String(ops),
      ...(values['write-buffer'] === undefined ? [] : ['--write-buffer', values['write-buffer']]),
      ...(values['write-map'] === true ? ['--write-map'] : []),
    ],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const line = child.stdout.trim().split('\n').at(-1) ?? '';
  if (child.status !== 0 || line === '') throw new Error(`the ${backend} run exited with code ${child.status}`);
  const r = JSON.parse(line) as MicroResult;
  rows.push(
    `| ${r.backend} | ${keys.toLocaleString('en')} | ${r.fillNsPerRecord.toFixed(0)} | ${r.getPutNsPerRecord.toFixed(0)} | ${r.snapshotSyncMs.toFixed(1)} | ${r.snapshotMs.toFixed(0)} | ${r.snapshotMb.toFixed(1)} | ${r.restoreMs.toFixed(0)} | ${r.peakRssMb.toFixed(0)} |`,
  );
  process.stderr.write(`${rows.at(-1)}\n`);
}
process.stdout.write(
  [
    `Per-record state cost, ${ops.toLocaleString('en')} random get+put over ${keys.toLocaleString('en')} keys, Node ${process.versions.node}:`,
    '',
    '| backend | keys | fill ns/record | get+put ns/record | snapshot sync ms | snapshot ms | snapshot MB | restore ms | peak RSS MB |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'),
);
