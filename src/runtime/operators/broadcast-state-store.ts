import { WeirError } from '../../core/errors/weir-error.ts';
import type { BroadcastState, ReadOnlyBroadcastState } from '../../core/functions/broadcast-process-functions.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import type { MapStateDescriptor } from '../../core/state/state-descriptors.ts';
import type { ListState } from '../../core/state/state-types.ts';

/** One broadcast state of one subtask as a checkpoint keeps it (format version 1). */
interface BroadcastStateCopy {
  v: 1;
  name: string;
  subtask: number;
  parallelism: number;
  entries: [unknown, unknown][];
}

/** The operator state the copies are kept in: union list state, so a restore sees every old subtask's copy. */
const BROADCAST_STATE = 'broadcast-state';

/**
 * An operator's broadcast states (Flink's broadcast state backend), one map per descriptor the
 * broadcast stream was given. A checkpoint keeps each subtask's copy; a restore, at any
 * parallelism, gives new subtask i the copy of old subtask i modulo the old parallelism, as Flink
 * does (the copies are equal when the broadcast side is deterministic).
 */
export class BroadcastStateStore {
  readonly #maps = new Map<string, Map<unknown, unknown>>();
  readonly #readOnly = new Map<string, ReadOnlyBroadcastState<unknown, unknown>>();
  readonly #writable = new Map<string, BroadcastState<unknown, unknown>>();
  #list!: ListState<BroadcastStateCopy>;
  #context!: OperatorContext;

  constructor(descriptors: readonly MapStateDescriptor<unknown, unknown>[]) {
    for (const descriptor of descriptors) this.#maps.set(descriptor.name, new Map());
  }

  open(context: OperatorContext): void {
    this.#context = context;
    this.#list = context.operatorState.getUnionListState<BroadcastStateCopy>(BROADCAST_STATE);
    const copies = this.#list.get();
    for (const [name, map] of this.#maps) {
      const ofName = copies.filter((copy) => copy.name === name);
      if (ofName.length === 0) continue;
      const parallelism = (ofName[0] as BroadcastStateCopy).parallelism;
      const mine = ofName.find((copy) => copy.subtask === context.subtaskIndex % parallelism) ?? (ofName[0] as BroadcastStateCopy);
      for (const [key, value] of mine.entries) map.set(key, value);
    }
    this.#list.clear();
  }

  /** Writes this subtask's copies into the operator state, as the barrier passes. */
  snapshot(): void {
    const { subtaskIndex, parallelism } = this.#context;
    this.#list.update([...this.#maps].map(([name, map]) => ({ v: 1, name, subtask: subtaskIndex, parallelism, entries: [...map] })));
  }

  readOnly<K, V>(descriptor: MapStateDescriptor<K, V>): ReadOnlyBroadcastState<K, V> {
    let view = this.#readOnly.get(descriptor.name);
    if (view === undefined) {
      const map = this.#map(descriptor);
      view = {
        get: (key) => map.get(key),
        has: (key) => map.has(key),
        entries: () => map.entries(),
        keys: () => map.keys(),
        values: () => map.values(),
        get size() {
          return map.size;
        },
      };
      this.#readOnly.set(descriptor.name, view);
    }
    return view as ReadOnlyBroadcastState<K, V>;
  }

  writable<K, V>(descriptor: MapStateDescriptor<K, V>): BroadcastState<K, V> {
    let state = this.#writable.get(descriptor.name);
    if (state === undefined) {
      const map = this.#map(descriptor);
      state = Object.assign(Object.create(this.readOnly(descriptor)) as ReadOnlyBroadcastState<unknown, unknown>, {
        put: (key: unknown, value: unknown) => void map.set(key, value),
        remove: (key: unknown) => void map.delete(key),
        clear: () => map.clear(),
      });
      this.#writable.set(descriptor.name, state);
    }
    return state as BroadcastState<K, V>;
  }

  #map(descriptor: MapStateDescriptor<unknown, unknown>): Map<unknown, unknown> {
    const map = this.#maps.get(descriptor?.name);
    if (map === undefined) {
      throw new WeirError(
        'INVALID_CONFIG',
        `operator "${this.#context.operatorName}" asks for broadcast state "${String(descriptor?.name)}", but its broadcast stream was given ${[...this.#maps.keys()].map((name) => `"${name}"`).join(', ')}`,
        { hint: 'pass every descriptor the function uses to broadcast(...): stream.broadcast(rulesDescriptor)', fault: 'user' },
      );
    }
    return map;
  }
}
