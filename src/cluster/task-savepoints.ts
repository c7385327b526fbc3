import type { CheckpointLocation } from '../checkpoint/storage/checkpoint-location.ts';
import { WeirError } from '../core/errors/weir-error.ts';
import { injectedFault, injectedFaultPoint } from '../runtime/jobmaster/injected-fault.ts';
import type { SavepointBarrier } from './exchange-frames.ts';
import type { BarrierAt, ChannelMark } from './exchange-input.ts';
import { ENDED_BEFORE, type InputPartitionLayout, SavepointAlignment } from './savepoint-alignment.ts';
import type { SavepointRequest } from './savepoint-control.ts';
import type { TaskSavepointPart } from './task-checkpoint.ts';

/** What a barrier (or an end frame) did to a savepoint's alignment: the channels it counts now, and whether the frame's channel waits for the rest. */
export interface Aligned {
  alignment: SavepointAlignment;
  added: BarrierAt[];
  blocks: boolean;
}

/** The cluster's control topic as a member reads it (savepoint-control.ts). */
export interface SavepointControlView {
  readonly active: SavepointRequest | undefined;
  gaveUp(id: number): boolean;
  halts(id: number): boolean;
}

/**
 * One task's side of cluster savepoints: the latest part it committed (carried by its later
 * checkpoint records), whether a stopping savepoint halted it (it commits nothing more: its
 * output after the savepoint is the restore's to write), the savepoint a source task's next
 * checkpoint is, and a downstream task's alignment on barrier frames (savepoint-alignment.ts).
 */
export class TaskSavepoints {
  part: TaskSavepointPart | undefined;
  halted: boolean;
  #alignment: SavepointAlignment | undefined;
  readonly #name: string;
  readonly #control: SavepointControlView | undefined;

  constructor(name: string, control: SavepointControlView | undefined, restored: TaskSavepointPart | undefined) {
    this.#name = name;
    this.#control = control;
    this.part = restored;
    // Restored from its part of a stopping savepoint under way (its member left and handed it on): it stays halted.
    this.halted = restored?.stop !== undefined && control?.halts(restored.id) === true;
  }

  get aligning(): boolean {
    return this.#alignment !== undefined;
  }

  /** The savepoint a source task's next checkpoint is its part of, if one is asked for that it has not done. */
  requested(): SavepointBarrier | undefined {
    const active = this.#control?.active;
    return active !== undefined && active.id > (this.part?.id ?? 0) ? { savepoint: active.id, target: active.target, stop: active.stop } : undefined;
  }

  /**
   * The savepoint being aligned on was given up: the channels it blocked would wait for ever; or
   * the stopping savepoint that halted the task was (the stop failed: the cluster goes on); or one
   * whose part the task is committing (`pending`: its alignment done or a source's part triggered,
   * neither aligning nor halted yet; were that commit never to come, nothing else would end the
   * wait). Either way the task starts again from its latest checkpoint.
   */
  givenUp(pending: Iterable<number> = []): WeirError | undefined {
    const halting = this.halted ? this.part?.id : undefined;
    if (halting !== undefined && this.#control?.gaveUp(halting) === true) {
      return new WeirError('SAVEPOINT_FAILED', `${this.#name}: stopping savepoint ${halting} was given up after this task committed its part`, {
        hint: 'the cluster goes on: the task starts again from its latest checkpoint (its part)',
        fault: 'external',
      });
    }
    const aligning = this.#alignment?.barrier.savepoint;
    if (aligning !== undefined && this.#control?.gaveUp(aligning) === true) {
      return new WeirError('SAVEPOINT_FAILED', `${this.#name}: savepoint ${aligning} was given up while this task aligned on it`, {
        hint: 'the task starts again from its latest checkpoint, passing that savepoint’s barriers',
        fault: 'external',
      });
    }
    for (const id of pending) {
      if (this.#control?.gaveUp(id) !== true) continue;
      return new WeirError('SAVEPOINT_FAILED', `${this.#name}: savepoint ${id} was given up while this task's part of it was being committed`, {
        hint: 'the task starts again from its latest checkpoint, passing that savepoint’s barriers',
        fault: 'external',
      });
    }
    return undefined;
  }

  /** A task halted at its start: checks every second whether its stop was given up (then `fail` starts it again, from its part). */
  watchHalted(fail: (error: WeirError) => void): NodeJS.Timeout {
    const timer = setInterval(() => {
      const givenUp = this.givenUp();
      if (givenUp !== undefined) fail(givenUp);
    }, 1000);
    timer.unref();
    return timer;
  }

  /**
   * A barrier frame was read: the alignment it belongs to (`start` gives a new one its checkpoint)
   * and the channels it counts now (a new one also counts the channels that had `ended` before
   * it: FLIP-147), or undefined when the task passes it (a savepoint it did, one given up, a
   * channel's second), or an error when a newer savepoint's barrier came while an older one aligned.
   */
  onBarrier(
    barrier: SavepointBarrier,
    at: BarrierAt,
    layout: readonly InputPartitionLayout[],
    ended: readonly ChannelMark[],
    start: () => { id: number; location: CheckpointLocation },
  ): Aligned | WeirError | undefined {
    if (this.halted || barrier.savepoint <= (this.part?.id ?? 0) || this.#control?.gaveUp(barrier.savepoint) === true) return undefined;
    let alignment = this.#alignment;
    if (alignment !== undefined && alignment.barrier.savepoint !== barrier.savepoint) {
      if (barrier.savepoint < alignment.barrier.savepoint) return undefined;
      return new WeirError(
        'SAVEPOINT_FAILED',
        `${this.#name}: savepoint ${barrier.savepoint}'s barrier came while savepoint ${alignment.barrier.savepoint} was aligning`,
        { hint: 'the older savepoint was given up: the task starts again from its latest checkpoint and aligns on the newer one', fault: 'external' },
      );
    }
    const added: BarrierAt[] = [];
    if (alignment === undefined) {
      const { id, location } = start();
      alignment = new SavepointAlignment(barrier, id, location, layout);
      this.#alignment = alignment;
      for (const mark of ended) {
        const partition = layout.find((entry) => mark.channel >= entry.firstChannel && mark.channel < entry.firstChannel + entry.channels);
        if (partition === undefined) continue;
        const before: BarrierAt = { channel: mark.channel, topic: partition.topic, partition: partition.partition, offset: ENDED_BEFORE, mark };
        if (alignment.add(before)) added.push(before);
      }
    }
    if (alignment.add(at)) added.push(at);
    else if (added.length === 0) return undefined;
    if (alignment.complete) this.#alignment = undefined;
    return { alignment, added, blocks: added.includes(at) };
  }

  /** A channel's end frame was read: it counts as its barrier in the alignment under way, if any (undefined otherwise). */
  onEnd(at: BarrierAt): Aligned | undefined {
    const alignment = this.#alignment;
    if (alignment === undefined || !alignment.add(at)) return undefined;
    if (alignment.complete) this.#alignment = undefined;
    return { alignment, added: [at], blocks: false };
  }

  /**
   * The task committed its part: a log line, and a test's crash right after (its record, with its
   * skips, is what the task restores): WEIR_FAULT=savepoint-part:<savepoint id>[:fail] (with
   * `:fail`, the failure the task ends with).
   */
  committed(barrier: SavepointBarrier, part: TaskSavepointPart, checkpointId: number, log: (line: string) => void): WeirError | undefined {
    this.part = part;
    this.halted = barrier.stop !== undefined;
    log(`${this.#name}: its part of savepoint ${barrier.savepoint} is committed (checkpoint ${checkpointId})${this.halted ? '; it commits nothing more' : ''}`);
    return injectedFaultPoint === 'savepoint-part' ? injectedFault('savepoint-part', barrier.savepoint, this.#name) : undefined;
  }
}
