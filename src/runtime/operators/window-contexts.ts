import type { OutputTag } from '../../core/functions/output-tag.ts';
import type { OperatorContext } from '../../core/operator/stream-operator.ts';
import type { KeyedStateBackend } from '../../core/state/keyed-state-backend.ts';
import { mapState } from '../../core/state/state-descriptors.ts';
import type { MapState } from '../../core/state/state-types.ts';
import type { OnMergeContext, WindowValueState } from '../../core/windowing/trigger.ts';
import type { Window } from '../../core/windowing/window.ts';
import type { ProcessWindowContext } from '../../core/windowing/window-functions.ts';

/** What the trigger and window-function contexts read of their operator. */
export interface WindowOperatorView {
  readonly backend: KeyedStateBackend;
  readonly operatorContext: OperatorContext;
  readonly watermark: number;
}

/** The trigger's view of the current key and window (Flink's WindowOperator.Context), reused for every call. */
export class WindowTriggerContext implements OnMergeContext {
  readonly #operator: WindowOperatorView;
  window!: Window;
  namespace = '';
  #merged: string[] = [];
  readonly #states = new Map<string, { state: WindowValueState<unknown>; map: MapState<string, unknown> }>();

  constructor(operator: WindowOperatorView) {
    this.#operator = operator;
  }

  set(window: Window, namespace: string, merged: string[] = []): void {
    this.window = window;
    this.namespace = namespace;
    this.#merged = merged;
  }

  currentWatermark(): number {
    return this.#operator.watermark;
  }

  currentProcessingTime(): number {
    return this.#operator.operatorContext.currentProcessingTime();
  }

  registerEventTimeTimer(time: number): void {
    this.#operator.backend.registerTimer('event', time, this.namespace);
  }

  deleteEventTimeTimer(time: number): void {
    this.#operator.backend.deleteTimer('event', time, this.namespace);
  }

  registerProcessingTimeTimer(time: number): void {
    this.#operator.backend.registerTimer('processing', time, this.namespace);
    this.#operator.operatorContext.requestProcessingTimeCallback(time);
  }

  deleteProcessingTimeTimer(time: number): void {
    this.#operator.backend.deleteTimer('processing', time, this.namespace);
  }

  getPartitionedState<V>(name: string): WindowValueState<V> {
    return this.#entry(name).state as WindowValueState<V>;
  }

  mergePartitionedState<V>(name: string, merge: (a: V, b: V) => V): void {
    const { map } = this.#entry(name);
    let merged = map.get(this.namespace) as V | undefined;
    for (const namespace of this.#merged) {
      const value = map.get(namespace) as V | undefined;
      if (value === undefined) continue;
      merged = merged === undefined ? value : merge(merged, value);
      map.remove(namespace);
    }
    if (merged !== undefined) map.put(this.namespace, merged);
  }

  #entry(name: string): { state: WindowValueState<unknown>; map: MapState<string, unknown> } {
    let entry = this.#states.get(name);
    if (entry === undefined) {
      const map = this.#operator.backend.getState(mapState<string, unknown>(`window-trigger:${name}`));
      const state: WindowValueState<unknown> = {
        value: () => map.get(this.namespace),
        update: (value) => map.put(this.namespace, value),
        clear: () => map.remove(this.namespace),
      };
      entry = { state, map };
      this.#states.set(name, entry);
    }
    return entry;
  }
}

/** The window function's context (Flink's ProcessWindowFunction.Context), reused for every firing. */
export class WindowProcessContext<W extends Window> implements ProcessWindowContext<W> {
  readonly #operator: WindowOperatorView;
  window!: W;

  constructor(operator: WindowOperatorView) {
    this.#operator = operator;
  }

  currentWatermark(): number {
    return this.#operator.watermark;
  }

  currentProcessingTime(): number {
    return this.#operator.operatorContext.currentProcessingTime();
  }

  output<X>(tag: OutputTag<X>, value: X): void {
    this.#operator.operatorContext.output(tag.id, value, this.window.maxTimestamp());
  }
}
