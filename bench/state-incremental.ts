/**
 * What a checkpoint costs the keyed task, full against incremental (issue 34), no job: one backend
 * over every key group, a small object per key in ValueState ({ count, sum, last }), N keys filled;
 * then rounds of C random keys changed (a checkpoint interval's writes), each ended by a
 * checkpoint: a full snapshot, or an incremental one on the previous checkpoint (confirmed). Per
 * checkpoint: its synchronous part, the whole writing (wall clock and the thread's CPU time: the
 * task thread pays it in slices between records), its bytes against the bytes the changed keys
 * hold; then the restore of the last checkpoint (its chain). Each backend and mode runs in a
 * process of its own.
 *
 *   node bench/state-incremental.ts [--keys 1000000] [--changed 100000] [--rounds 6] [--backend disk,heap]
 * (npm run bench:state -- --snapshots passes --keys, --backend and --changed on.)
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { CheckpointableKeyedStateBackend } from '../src/core/state/keyed-state-backend.ts';
import { valueState } from '../src/core/state/state-descriptors.ts';
import { HeapKeyedStateBackend } from '../src/state/heap-keyed-state-backend.ts';
import { keyGroupRange } from '../src/state/key-group-range.ts';
import { LmdbKeyedStateBackend } from '../src/state/lmdb-keyed-state-backend.ts';

const { values } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    changed: { type: 'string', default: '100000' },
    rounds: { type: 'string', default: '6' },
    backend: { type: 'string', default: 'disk,heap' },
    one: { type: 'string' },
  },
});
const keys = Number(values.keys);
const changed = Number(values.changed);
const rounds = Number(values.rounds);

interface Result {
  backend: string;
  mode: string;
  /** Per checkpoint after the first (the first of either mode is full). */
  syncMs: number[];
  writeMs: number[];
  cpuMs: number[];
  bytes: number[];
  /** A full snapshot's bytes per key, times the keys changed in a round. */
  changedBytes: number;
  restoreMs: number;
  restoredFiles: number;
}

const median = (list: number[]) => list.toSorted((a, b) => a - b)[Math.floor(list.length / 2)] ?? 0;
const cpuNow = () => {
  const usage = process.threadCpuUsage();
  return (usage.user + usage.system) / 1000;
};

function run(backendName: string, mode: string): Result {
  const folder = mkdtempSync(join(tmpdir(), 'weir-bench-incremental-'));
  const make = (sub: string): CheckpointableKeyedStateBackend =>
    backendName === 'disk'
      ? new LmdbKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(0, 127), operatorName: 'bench', dir: join(folder, sub) })
      : new HeapKeyedStateBackend({ maxParallelism: 128, keyGroupRange: keyGroupRange(0, 127), operatorName: 'bench' });
  const descriptor = valueState<{ count: number; sum: number; last: number }>('stats');
  try {
    const backend = make('a');
    const state = backend.getState(descriptor);
    for (let i = 0; i < keys; i++) {
      backend.setCurrentKey(`user-${i}`);
      state.update({ count: 1, sum: i, last: i });
    }
    const result: Result = { backend: backendName, mode, syncMs: [], writeMs: [], cpuMs: [], bytes: [], changedBytes: 0, restoreMs: 0, restoredFiles: 0 };
    let chain: Uint8Array[] = [];
    let fullBytes = 0;
    let seed = 42;
    for (let round = 1; round <= rounds; round++) {
      for (let i = 0; i < changed; i++) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        backend.setCurrentKey(`user-${seed % keys}`);
        const current = state.value();
        state.update(current === undefined ? { count: 1, sum: i, last: i } : { count: current.count + 1, sum: current.sum + i, last: i });
      }
      const started = performance.now();
      const cpu = cpuNow();
      const writer =
        mode === 'incremental' ? backend.snapshotAsync({ checkpointId: round, base: round === 1 ? undefined : round - 1 }) : backend.snapshotAsync();
      const syncMs = performance.now() - started;
      writer.runToEnd();
      const bytes = writer.result();
      const writeMs = performance.now() - started;
      const cpuMs = cpuNow() - cpu;
      backend.notifyCheckpointComplete?.(round);
      chain = writer.delta === undefined ? [bytes] : [...chain, bytes];
      if (writer.delta === undefined) fullBytes = bytes.byteLength;
      if (round === 1) continue;
      result.syncMs.push(syncMs);
      result.writeMs.push(writeMs);
      result.cpuMs.push(cpuMs);
      result.bytes.push(bytes.byteLength);
    }
    // The keys a round touched (random, some twice) at a full snapshot's bytes per key.
    const distinct = keys * (1 - Math.exp(-changed / keys));
    result.changedBytes = (distinct * fullBytes) / keys;
    const started = performance.now();
    const restored = make('b');
    restored.restore(chain);
    result.restoreMs = performance.now() - started;
    result.restoredFiles = chain.length;
    return result;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

if (values.one !== undefined) {
  const [backend, mode] = values.one.split(':') as [string, string];
  process.stdout.write(`${JSON.stringify(run(backend, mode))}\n`);
  process.exit(0);
}

const rows: string[] = [];
for (const backend of values.backend.split(',')) {
  for (const mode of ['full', 'incremental']) {
    const flags = ['--one', `${backend}:${mode}`, '--keys', String(keys), '--changed', String(changed), '--rounds', String(rounds)];
    const child = spawnSync(process.execPath, [...process.execArgv, import.meta.filename, ...flags], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = child.stdout.trim().split('\n').at(-1) ?? '';
    if (child.status !== 0 || line === '') throw new Error(`the ${backend} ${mode} run exited with code ${child.status}`);
    const r = JSON.parse(line) as Result;
    const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
    rows.push(
      `| ${r.backend} | ${r.mode} | ${median(r.syncMs).toFixed(1)} | ${Math.max(...r.syncMs).toFixed(1)} | ${median(r.writeMs).toFixed(0)} | ${Math.max(...r.writeMs).toFixed(0)} | ${median(r.cpuMs).toFixed(0)} | ${mb(median(r.bytes))} | ${mb(Math.max(...r.bytes))} | ${mb(r.changedBytes)} | ${(median(r.bytes) / r.changedBytes).toFixed(2)} | ${r.restoredFiles} | ${r.restoreMs.toFixed(0)} |`,
    );
    process.stderr.write(`${rows.at(-1)}\n`);
  }
}
process.stdout.write(
  [
    `Checkpoints of ${keys.toLocaleString('en')} keys with ${changed.toLocaleString('en')} random writes between them, ${rounds - 1} checkpoints measured after the first, no job (bench/state-incremental.ts), Node ${process.versions.node}:`,
    '',
    '| backend | mode | sync p50 ms | sync max ms | write p50 ms | write max ms | write CPU p50 ms | MB p50 | MB max | MB changed | p50 / changed | restore files | restore ms |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n'),
);
