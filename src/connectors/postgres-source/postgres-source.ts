import type { Preflightable } from '../../core/connector/preflight.ts';
import type { Source } from '../../core/connector/source.ts';
import type { PostgresChangeRecord, PostgresSourceSplit } from './postgres-change-record.ts';
import { type PostgresSourceOptions, parsePostgresSourceOptions } from './postgres-source-options.ts';
import { postgresSourcePreflight } from './postgres-source-preflight.ts';
import { PostgresSourceReader } from './postgres-source-reader.ts';

/**
 * PostgreSQL change data capture (Flink CDC's Postgres connector): logical replication with
 * `pgoutput` from a replication slot, after an initial snapshot of the publication's tables. The
 * records are typed changes ({@link PostgresChangeRecord}). Exactly-once: the position is the
 * checkpointed state, and the slot is told it may move on (the confirmed flush LSN) only when a
 * checkpoint holding that position completes, so a restore replays exactly what no completed
 * checkpoint holds. One slot is one stream: the source runs at parallelism 1.
 */
export function postgresSource(options: PostgresSourceOptions): Source<PostgresChangeRecord, PostgresSourceSplit> & Preflightable {
  const parsed = parsePostgresSourceOptions(options);
  return {
    name: `postgres source (${parsed.publication})`,
    bounded: false,
    createInitialSplits: () => [{ slot: parsed.slot, phase: 'snapshot', lsn: null, fresh: true }],
    createReader: (context) => new PostgresSourceReader(parsed, context),
    preflight: (context) => postgresSourcePreflight(parsed, context),
  };
}
