import type { KeySelector } from '../core/functions/key-selector.ts';
import type { Collector } from '../core/functions/process-functions.ts';
import type { StateKey } from '../core/state/state-key.ts';
import type { Trigger } from '../core/windowing/trigger.ts';
import type { Window } from '../core/windowing/window.ts';
import type { WindowAssigner } from '../core/windowing/window-assigner.ts';
import { type DataStream, KeyedStream, type OperatorOptions, type SingleOutputStreamOperator } from './data-stream.ts';

/** A record of either input of a window join, tagged with its side (Flink's TaggedUnion). */
interface TaggedUnion<T1, T2> {
  side: 1 | 2;
  value: T1 | T2;
}

/** Flink's CoGroupFunction: both inputs' records of one key and window. */
export type CoGroupFunction<T1, T2, OUT> = (first: readonly T1[], second: readonly T2[], out: Collector<OUT>) => void;

/** Flink's JoinFunction: one pair of a window join. */
export type JoinFunction<T1, T2, OUT> = (first: T1, second: T2) => OUT;

interface WindowSpec<W extends Window> {
  assigner: WindowAssigner<unknown, W>;
  trigger?: Trigger<unknown, W> | undefined;
  allowedLateness?: number | string | undefined;
}

/** The window of a join or coGroup, ready for `apply` (Flink's WithWindow). Builders never mutate. */
export class CoGroupWindow<T1, T2, K extends StateKey, W extends Window> {
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;
  readonly #keys: [(value: T1) => K, (value: T2) => K];
  readonly #spec: WindowSpec<W>;

  /** @internal */
  constructor(first: DataStream<T1>, second: DataStream<T2>, keys: [(value: T1) => K, (value: T2) => K], spec: WindowSpec<W>) {
    this.#first = first;
    this.#second = second;
    this.#keys = keys;
    this.#spec = spec;
  }

  trigger(trigger: Trigger<unknown, W>): this {
    return this.#with({ ...this.#spec, trigger });
  }

  allowedLateness(lateness: number | string): this {
    return this.#with({ ...this.#spec, allowedLateness: lateness });
  }

  #with(spec: WindowSpec<W>): this {
    const Same = this.constructor as new (
      first: DataStream<T1>,
      second: DataStream<T2>,
      keys: [(value: T1) => K, (value: T2) => K],
      spec: WindowSpec<W>,
    ) => this;
    return new Same(this.#first, this.#second, this.#keys, spec);
  }

  /** @internal Both inputs' records of each key and window to `fn`. */
  protected coGroup<R>(fn: CoGroupFunction<T1, T2, R>, options: OperatorOptions): SingleOutputStreamOperator<R> {
    const [keyOfFirst, keyOfSecond] = this.#keys;
    // Flink's way: tag each side, key the union by either side's key, window it, split it again.
    const first = this.#first.map((value): TaggedUnion<T1, T2> => ({ side: 1, value }), { name: 'join-tag-first' });
    const second = this.#second.map((value): TaggedUnion<T1, T2> => ({ side: 2, value }), { name: 'join-tag-second' });
    const keySelector = (tagged: TaggedUnion<T1, T2>): K => (tagged.side === 1 ? keyOfFirst(tagged.value as T1) : keyOfSecond(tagged.value as T2));
    const keyed = new KeyedStream<TaggedUnion<T1, T2>, K>(first.graph, {
      inputs: [...first.upstream.inputs, ...second.upstream.inputs],
      partitioning: 'hash',
      keySelector: keySelector as KeySelector<unknown>,
    });
    let windowed = keyed.window(this.#spec.assigner as WindowAssigner<TaggedUnion<T1, T2>, W>);
    if (this.#spec.trigger !== undefined) windowed = windowed.trigger(this.#spec.trigger);
    if (this.#spec.allowedLateness !== undefined) windowed = windowed.allowedLateness(this.#spec.allowedLateness);
    return windowed.process<R>(
      {
        process(_key, _context, elements, out) {
          const firsts: T1[] = [];
          const seconds: T2[] = [];
          for (const element of elements) {
            if (element.side === 1) firsts.push(element.value as T1);
            else seconds.push(element.value as T2);
          }
          fn(firsts, seconds, out);
        },
      },
      options,
    );
  }
}

/** A coGroup with its window: `apply((firsts, seconds, out) => ...)`. */
export class CoGroupedWindow<T1, T2, K extends StateKey, W extends Window> extends CoGroupWindow<T1, T2, K, W> {
  apply<R>(fn: CoGroupFunction<T1, T2, R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    return this.coGroup(fn, { name: 'coGroup', ...options });
  }
}

/** A join with its window: `apply((first, second) => joined)`, called for every pair of a key and window. */
export class JoinedWindow<T1, T2, K extends StateKey, W extends Window> extends CoGroupWindow<T1, T2, K, W> {
  apply<R>(fn: JoinFunction<T1, T2, R>, options: OperatorOptions = {}): SingleOutputStreamOperator<R> {
    return this.coGroup<R>(
      (firsts, seconds, out) => {
        for (const first of firsts) for (const second of seconds) out.collect(fn(first, second));
      },
      { name: 'join', ...options },
    );
  }
}

/** `a.join(b)`: give the keys next (Flink's JoinedStreams). An inner join of the two streams' records per key and window. */
export class JoinedStreams<T1, T2> {
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;

  /** @internal */
  constructor(first: DataStream<T1>, second: DataStream<T2>) {
    this.#first = first;
    this.#second = second;
  }

  where<K extends StateKey>(
    keyOfFirst: (value: T1) => K,
  ): { equalTo(keyOfSecond: (value: T2) => K): { window<W extends Window>(assigner: WindowAssigner<unknown, W>): JoinedWindow<T1, T2, K, W> } } {
    return {
      equalTo: (keyOfSecond) => ({
        window: <W extends Window>(assigner: WindowAssigner<unknown, W>) =>
          new JoinedWindow<T1, T2, K, W>(this.#first, this.#second, [keyOfFirst, keyOfSecond], { assigner }),
      }),
    };
  }
}

/** `a.coGroup(b)`: give the keys next (Flink's CoGroupedStreams). */
export class CoGroupedStreams<T1, T2> {
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;

  /** @internal */
  constructor(first: DataStream<T1>, second: DataStream<T2>) {
    this.#first = first;
    this.#second = second;
  }

  where<K extends StateKey>(
    keyOfFirst: (value: T1) => K,
  ): { equalTo(keyOfSecond: (value: T2) => K): { window<W extends Window>(assigner: WindowAssigner<unknown, W>): CoGroupedWindow<T1, T2, K, W> } } {
    return {
      equalTo: (keyOfSecond) => ({
        window: <W extends Window>(assigner: WindowAssigner<unknown, W>) =>
          new CoGroupedWindow<T1, T2, K, W>(this.#first, this.#second, [keyOfFirst, keyOfSecond], { assigner }),
      }),
    };
  }
}
