import type { ControlReader, SavepointRequest } from './savepoint-control.ts';
import type { SavepointControlView } from './task-savepoints.ts';

/**
 * The control topic as the member's reader answers its tasks, in a form that crosses to a task
 * thread: the savepoint under way, the newest id any record names and whether that one was
 * aborted, and which savepoint ids halt a task restored from its stopping part. Those are every
 * answer the reader can give: `gaveUp(id)` is `id < latestId` or the newest aborted, and only the
 * active stopping savepoint or the stopped one halt.
 */
export interface ControlSnapshot {
  active: SavepointRequest | undefined;
  latestId: number;
  latestAborted: boolean;
  halting: number[];
}

/** What `reader` answers now. */
export function controlSnapshot(reader: ControlReader): ControlSnapshot {
  const { state } = reader;
  const active = state.active;
  const candidates = [active?.id, state.stopped].filter((id): id is number => id !== undefined);
  return {
    active,
    latestId: state.latestId,
    latestAborted: state.latestId > 0 && state.gaveUp(state.latestId),
    halting: [...new Set(candidates.filter((id) => reader.halts(id)))],
  };
}

export const sameControl = (a: ControlSnapshot, b: ControlSnapshot): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * A task thread's view of the control topic: the member's reader's answers, relayed by message
 * (one reader per member, so every thread answers with the member's history of the topic).
 */
export class RelayedControl implements SavepointControlView {
  #snapshot: ControlSnapshot;

  constructor(snapshot: ControlSnapshot) {
    this.#snapshot = snapshot;
  }

  update(snapshot: ControlSnapshot): void {
    this.#snapshot = snapshot;
  }

  get active(): SavepointRequest | undefined {
    return this.#snapshot.active;
  }

  gaveUp(id: number): boolean {
    return id < this.#snapshot.latestId || (id === this.#snapshot.latestId && this.#snapshot.latestAborted);
  }

  halts(id: number): boolean {
    return this.#snapshot.halting.includes(id);
  }
}
