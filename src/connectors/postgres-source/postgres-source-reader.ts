import type pg from 'pg';
import type { SourceReader, SourceReaderContext } from '../../core/connector/source.ts';
import { WeirError } from '../../core/errors/weir-error.ts';
import { postgresFailure } from '../postgres/postgres-errors.ts';
import { ChangeStreamDecoder, type StreamItem } from './change-stream-decoder.ts';
import { InitialSnapshot } from './initial-snapshot.ts';
import { formatLsn, type Lsn, parseLsn } from './lsn.ts';
import { PGOUTPUT_PROTOCOL_VERSION } from './pgoutput-decoder.ts';
import type { PostgresChangeRecord, PostgresSourceSplit } from './postgres-change-record.ts';
import type { ParsedPostgresSourceOptions } from './postgres-source-options.ts';
import { ackAtEmission, faultBeforeAck, snapshotFetchDelay } from './postgres-source-test-hooks.ts';
import { connectSource, quoteIdentifier } from './replication-connection.ts';
import { standbyStatusUpdate } from './replication-messages.ts';

/** pg-copy-streams' CopyBoth stream, as the reader uses it. */
type CopyBothStream = NodeJS.ReadWriteStream & { pause(): unknown; resume(): unknown; isPaused(): boolean; destroy(): unknown };

type Queued = StreamItem | { kind: 'snapshot-done'; lsn: Lsn };

/**
 * The reader of `postgresSource` (one subtask: one slot is one stream). Its position (the split)
 * is what it has emitted: `lsn`, the end of the last transaction emitted whole, and `partial`, how
 * many changes of the next one. Each checkpoint keeps that position; only when the checkpoint
 * completes is it confirmed to the server (the standby status update's flush LSN), so the slot
 * never moves past what a completed checkpoint holds, and a restore starts the stream at the
 * checkpoint's position and skips what it holds (ChangeStreamDecoder). Decoded changes wait in a
 * bounded queue; beyond `maxBufferedChanges` the stream is paused (TCP back pressure to the server).
 */
export class PostgresSourceReader implements SourceReader<PostgresChangeRecord, PostgresSourceSplit> {
  readonly #options: ParsedPostgresSourceOptions;
  readonly #where: string;
  readonly #applicationName: string;
  #queue: Queued[] = [];
  #head = 0;
  #phase: 'snapshot' | 'streaming' = 'snapshot';
  #lsn: Lsn | null = null;
  #partial: { commitLsn: string; emitted: number } | undefined;
  /** Snapshot rows emitted: a checkpoint cannot hold part of a snapshot. */
  #snapshotRows = 0;
  /** The snapshot's end is in the queue: the rest of the snapshot goes out in one poll. */
  #snapshotQueued = false;
  #failure: unknown;
  #closed = false;
  #pending = new Map<number, Lsn | null>();
  #acknowledged = 0n;
  #connection: pg.Client | undefined;
  #stream: CopyBothStream | undefined;
  #snapshot: InitialSnapshot | undefined;
  #statusTimer: NodeJS.Timeout | undefined;
  #room: (() => void) | undefined;
  /** Settles when a checkpoint this reader took part in completes (or the reader closes). */
  readonly #firstCheckpoint: Promise<void>;
  #firstCheckpointDone: () => void = () => {};

  constructor(options: ParsedPostgresSourceOptions, context: SourceReaderContext) {
    this.#options = options;
    this.#firstCheckpoint = new Promise((resolve) => {
      this.#firstCheckpointDone = resolve;
    });
    this.#where = `postgres source "${context.uid ?? options.slot}"`;
    this.#applicationName = `weir ${context.uid ?? 'postgres source'}`;
    if (context.parallelism !== 1) {
      throw new WeirError(
        'INVALID_PARALLELISM',
        `${this.#where} runs at parallelism ${context.parallelism}, but replication slot "${options.slot}" is one stream read by one subtask`,
        {
          hint: `give the source parallelism 1 (env.fromSource(postgresSource(...), { parallelism: 1 })); later operators may run wider after a keyBy`,
          fault: 'user',
        },
      );
    }
  }

  open(splits: PostgresSourceSplit[]): void {
    const split = splits[0] ?? { slot: this.#options.slot, phase: 'snapshot', lsn: null, fresh: true };
    if (split.slot !== this.#options.slot) {
      throw new WeirError('INVALID_SOURCE', `${this.#where}: the checkpoint holds a position of slot "${split.slot}", not of "${this.#options.slot}"`, {
        hint: 'restore with the slot the checkpoint was taken with, or start the job without the checkpoint',
        fault: 'user',
      });
    }
    this.#phase = split.phase;
    this.#lsn = split.lsn === null ? null : parseLsn(split.lsn);
    this.#partial = split.partial;
    void this.#run(split).catch((error: unknown) => {
      if (!this.#closed) this.#failure = error;
    });
  }

  pollNext(max: number): PostgresChangeRecord[] {
    if (this.#failure !== undefined) throw postgresFailure(this.#where, 'reading the replication stream', this.#failure);
    const out: PostgresChangeRecord[] = [];
    const queue = this.#queue;
    let head = this.#head;
    const limit = this.#phase === 'snapshot' && this.#snapshotQueued ? Number.POSITIVE_INFINITY : max;
    while (head < queue.length && out.length < limit) {
      const item = queue[head++] as Queued;
      if (item.kind === 'change') {
        const record = item.record;
        if (record.op === 'snapshot') this.#snapshotRows++;
        else if (this.#partial?.commitLsn === record.commitLsn) this.#partial.emitted++;
        else this.#partial = { commitLsn: record.commitLsn, emitted: 1 };
        out.push(record);
      } else if (item.kind === 'commit') {
        this.#lsn = item.endLsn;
        this.#partial = undefined;
      } else if (item.kind === 'position') {
        if (this.#partial === undefined && (this.#lsn === null || item.lsn > this.#lsn)) this.#lsn = item.lsn;
      } else {
        this.#phase = 'streaming';
        this.#lsn = item.lsn;
        this.#snapshotRows = 0;
        break; // the stream's changes from the next poll on, `max` at a time
      }
    }
    if (head === queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else this.#head = head;
    if (queue.length - head < this.#options.maxBufferedChanges / 2) {
      if (this.#stream?.isPaused()) this.#stream.resume();
      this.#room?.();
    }
    if (ackAtEmission && this.#lsn !== null && this.#phase === 'streaming') this.#sendStatus(this.#lsn);
    return out;
  }

  /** Changes (and positions) decoded and not yet emitted: at most about maxBufferedChanges. */
  get buffered(): number {
    return this.#queue.length - this.#head;
  }

  /**
   * Why no checkpoint can be taken now, if none can: part of the snapshot is emitted (a checkpoint
   * cannot hold part of a snapshot). For a runtime that declines such a checkpoint (Flink's
   * CHECKPOINT_DECLINED_TASK_NOT_READY) instead of calling snapshotState, which fails the attempt.
   */
  checkpointNotReady(): string | undefined {
    return this.#phase === 'snapshot' && this.#snapshotRows > 0 ? `${this.#where} is in its initial snapshot (${this.#snapshotRows} rows emitted)` : undefined;
  }

  snapshotState(checkpointId: number): PostgresSourceSplit[] {
    if (this.#phase === 'snapshot' && this.#snapshotRows > 0) {
      // A checkpoint must not hold part of the snapshot: restored, the rest could not be read in the same snapshot.
      throw new WeirError(
        'CHECKPOINT_FAILED',
        `${this.#where}: checkpoint ${checkpointId} came during the initial snapshot (${this.#snapshotRows} rows emitted); a checkpoint cannot hold part of a snapshot`,
        {
          hint: "give checkpointing.interval more time than the snapshot takes (the restart reads the snapshot again, from a new slot), or use snapshot: 'never'",
          fault: 'user',
          retriable: true,
        },
      );
    }
    const lsn = this.#lsn === null ? null : formatLsn(this.#lsn);
    this.#pending.set(checkpointId, this.#phase === 'streaming' ? this.#lsn : null);
    return [{ slot: this.#options.slot, phase: this.#phase, lsn, ...(this.#partial === undefined ? {} : { partial: { ...this.#partial } }) }];
  }

  /** The checkpoint is durable: the server may now forget everything before its position (and never before). */
  notifyCheckpointComplete(checkpointId: number): void {
    if (this.#pending.size > 0) this.#firstCheckpointDone();
    let lsn: Lsn | null = null;
    for (const [id, position] of this.#pending) {
      if (id > checkpointId) continue;
      if (position !== null && (lsn === null || position > lsn)) lsn = position;
      this.#pending.delete(id);
    }
    if (lsn === null || lsn <= this.#acknowledged) return;
    faultBeforeAck(checkpointId, formatLsn(lsn));
    this.#acknowledged = lsn;
    this.#sendStatus(lsn);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#firstCheckpointDone();
    clearInterval(this.#statusTimer);
    this.#room?.();
    await this.#snapshot?.close();
    const connection = this.#connection;
    if (connection !== undefined) {
      this.#stream?.destroy();
      // A connection in CopyBoth mode: its socket is closed (the walsender ends with it).
      (connection as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
      await Promise.race([connection.end().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    }
  }

  #sendStatus(lsn: Lsn, replyRequested = false): void {
    this.#stream?.write(standbyStatusUpdate(lsn, Date.now(), replyRequested));
  }

  async #run(split: PostgresSourceSplit): Promise<void> {
    if (this.#phase === 'snapshot') await this.#prepareSlot(split.fresh === true);
    if (this.#closed) return;
    await this.#stream_(this.#lsn ?? 0n);
  }

  /** Before the stream: the slot, and the snapshot when the source takes one. */
  async #prepareSlot(fresh: boolean): Promise<void> {
    const { slot } = this.#options;
    const admin = await connectSource(this.#options.connectionString, false, this.#applicationName, this.#where);
    let exists: boolean;
    try {
      const found = await admin.query<{ active: boolean }>('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [slot]);
      exists = found.rows.length > 0;
      if (exists && this.#options.snapshot === 'initial') {
        if (fresh) {
          throw new WeirError(
            'INVALID_SOURCE',
            `${this.#where}: replication slot "${slot}" exists already, and the job has no checkpoint of it to restore: its position is not this job's`,
            {
              hint: `drop it (SELECT pg_drop_replication_slot('${slot}')) to start with a new snapshot, set snapshot: 'never' to stream from where the slot is, or restore the job from its latest checkpoint`,
              fault: 'user',
            },
          );
        }
        // Restored from a checkpoint taken before the snapshot: the slot is this job's, made by a snapshot the checkpoint does not hold.
        await admin.query('SELECT pg_drop_replication_slot($1)', [slot]);
        exists = false;
      }
    } catch (error) {
      throw postgresFailure(this.#where, `looking up replication slot "${slot}"`, error);
    } finally {
      await admin.end().catch(() => {});
    }
    let start: Lsn | null = null;
    if (this.#options.snapshot === 'initial') {
      // A fresh start waits for its first checkpoint (it holds "no snapshot yet") before it makes the
      // slot: then a crash at any later point restores from a checkpoint, and a slot found then is
      // this job's own, to drop and make again; on a fresh start a slot found is refused, as not ours.
      if (fresh) await this.#firstCheckpoint;
      if (this.#closed) return;
      const snapshot = await InitialSnapshot.begin(this.#options, this.#where, this.#applicationName);
      this.#snapshot = snapshot;
      // Rows are held until the snapshot is read whole and its slot made permanent, then emitted in one
      // poll: no checkpoint falls inside a snapshot of up to maxBufferedChanges rows. A larger one is
      // emitted as it is read, and a checkpoint during it fails the attempt (snapshotState).
      let held: PostgresChangeRecord[] = [];
      for (;;) {
        if (this.#closed) {
          await snapshot.close();
          return;
        }
        const rows = await snapshot.next();
        if (rows === null) break;
        await snapshotFetchDelay();
        for (const record of rows) held.push(record);
        if (held.length >= this.#options.maxBufferedChanges) {
          for (const record of held) this.#queue.push({ kind: 'change', record });
          held = [];
          await this.#waitForRoom();
        }
      }
      await snapshot.finish();
      this.#snapshot = undefined;
      for (const record of held) this.#queue.push({ kind: 'change', record });
      start = snapshot.consistentPoint;
    } else if (!exists) {
      const connection = await connectSource(this.#options.connectionString, true, this.#applicationName, this.#where);
      try {
        const created = await connection.query<{ consistent_point: string }>(`CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput NOEXPORT_SNAPSHOT`);
        start = parseLsn((created.rows[0] as { consistent_point: string }).consistent_point);
      } catch (error) {
        throw postgresFailure(this.#where, `creating replication slot "${slot}"`, error);
      } finally {
        await connection.end().catch(() => {});
      }
    }
    this.#queue.push({ kind: 'snapshot-done', lsn: start ?? 0n });
    this.#snapshotQueued = true;
  }

  async #waitForRoom(): Promise<void> {
    while (!this.#closed && this.#queue.length - this.#head >= this.#options.maxBufferedChanges) {
      await new Promise<void>((resolve) => {
        this.#room = resolve;
      });
      this.#room = undefined;
    }
  }

  /** START_REPLICATION from `from` (0: from the slot's confirmed position); frames decoded into the queue. */
  async #stream_(from: Lsn): Promise<void> {
    // pg-copy-streams' `both` (CopyBoth, for START_REPLICATION) is not in its published types.
    const copyStreams = (await import('pg-copy-streams')).default as unknown as {
      both(sql: string, options: { alignOnCopyDataFrame: boolean }): pg.Submittable;
    };
    const connection = await connectSource(this.#options.connectionString, true, this.#applicationName, this.#where);
    if (this.#closed) {
      await connection.end().catch(() => {});
      return;
    }
    this.#connection = connection;
    const tables = this.#options.tables;
    const decoder = new ChangeStreamDecoder(
      { lsn: from, partial: this.#partial === undefined ? undefined : { commitLsn: parseLsn(this.#partial.commitLsn), emitted: this.#partial.emitted } },
      tables === undefined ? undefined : (schema, table) => tables.some((wanted) => wanted.schema === schema && wanted.table === table),
    );
    const publication = this.#options.publication.replaceAll("'", "''");
    const sql = `START_REPLICATION SLOT ${this.#options.slot} LOGICAL ${formatLsn(from)} (proto_version '${PGOUTPUT_PROTOCOL_VERSION}', publication_names '${quoteIdentifier(publication)}')`;
    const stream = connection.query(copyStreams.both(sql, { alignOnCopyDataFrame: true })) as unknown as CopyBothStream;
    this.#stream = stream;
    const items: StreamItem[] = [];
    stream.on('data', (frame: Buffer) => {
      try {
        const reply = decoder.decode(frame, items);
        for (const item of items) this.#queue.push(item);
        items.length = 0;
        if (reply) this.#sendStatus(this.#acknowledged);
        if (this.#queue.length - this.#head >= this.#options.maxBufferedChanges) stream.pause();
      } catch (error) {
        this.#failure ??= error;
        stream.pause();
      }
    });
    stream.on('error', (error: Error) => {
      if (!this.#closed) this.#failure ??= error;
    });
    stream.on('end', () => {
      if (!this.#closed) this.#failure ??= new Error('the server ended the replication stream');
    });
    // Status updates keep the walsender from timing out (wal_sender_timeout) while the stream is paused.
    this.#statusTimer = setInterval(() => this.#sendStatus(this.#acknowledged), this.#options.statusInterval);
    this.#statusTimer.unref();
  }
}
