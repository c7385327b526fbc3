import type { KeySelector } from '../core/functions/key-selector.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import type { Trigger } from '../core/windowing/trigger.ts';
import type { Window } from '../core/windowing/window.ts';
import type { WindowAssigner } from '../core/windowing/window-assigner.ts';
import { compositeKeySelector } from '../state/composite-key.ts';
import type {
  CoGroupedStreams,
  CoGroupedWindow,
  CoGroupFunction,
  DataStream,
  JoinedStreams,
  JoinedWindow,
  JoinFunction,
  SingleOutputStreamOperator,
} from './data-stream.ts';
import type { StreamFactory } from './stream-factory.ts';
import type { ProcessingOptions } from './stream-transformations.ts';

/** A record of either input of a window join, tagged with its side (Flink's TaggedUnion). */
interface TaggedUnion<T1, T2> {
  side: 1 | 2;
  value: T1 | T2;
}

interface WindowSpec<W extends Window> {
  assigner: WindowAssigner<unknown, W>;
  trigger?: Trigger<unknown, W> | undefined;
  allowedLateness?: number | string | undefined;
}

/** The window of a join or coGroup, ready for `apply` (Flink's WithWindow). Builders never mutate. */
abstract class CoGroupWindowImpl<T1, T2, K extends KeyLike, W extends Window> {
  readonly #factory: StreamFactory;
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;
  readonly #keys: [(value: T1) => K, (value: T2) => K];
  readonly #spec: WindowSpec<W>;

  constructor(factory: StreamFactory, first: DataStream<T1>, second: DataStream<T2>, keys: [(value: T1) => K, (value: T2) => K], spec: WindowSpec<W>) {
    this.#factory = factory;
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
      factory: StreamFactory,
      first: DataStream<T1>,
      second: DataStream<T2>,
      keys: [(value: T1) => K, (value: T2) => K],
      spec: WindowSpec<W>,
    ) => this;
    return new Same(this.#factory, this.#first, this.#second, this.#keys, spec);
  }

  /** @internal Both inputs' records of each key and window to `fn`. */
  protected coGroup<R>(fn: CoGroupFunction<T1, T2, R>, options: ProcessingOptions): SingleOutputStreamOperator<R> {
    const [keyOfFirst, keyOfSecond] = this.#keys;
    // Flink's way: tag each side, key the union by either side's key, window it, split it again.
    const first = this.#first.map((value): TaggedUnion<T1, T2> => ({ side: 1, value }), { name: 'join-tag-first' });
    const second = this.#second.map((value): TaggedUnion<T1, T2> => ({ side: 2, value }), { name: 'join-tag-second' });
    const keySelector = (tagged: TaggedUnion<T1, T2>): K => (tagged.side === 1 ? keyOfFirst(tagged.value as T1) : keyOfSecond(tagged.value as T2));
    const keyed = this.#factory.keyedStream<TaggedUnion<T1, T2>, K>({
      inputs: [...first.upstream.inputs, ...second.upstream.inputs],
      partitioning: 'hash',
      keySelector: compositeKeySelector(keySelector) as KeySelector<unknown>,
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

/** The {@link CoGroupedWindow} of a job's graph. */
export class CoGroupedWindowImpl<T1, T2, K extends KeyLike, W extends Window> extends CoGroupWindowImpl<T1, T2, K, W> implements CoGroupedWindow<T1, T2, K, W> {
  apply<R>(fn: CoGroupFunction<T1, T2, R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    return this.coGroup(fn, { name: 'coGroup', ...options });
  }
}

/** The {@link JoinedWindow} of a job's graph. */
export class JoinedWindowImpl<T1, T2, K extends KeyLike, W extends Window> extends CoGroupWindowImpl<T1, T2, K, W> implements JoinedWindow<T1, T2, K, W> {
  apply<R>(fn: JoinFunction<T1, T2, R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    return this.coGroup<R>(
      (firsts, seconds, out) => {
        for (const first of firsts) for (const second of seconds) out.collect(fn(first, second));
      },
      { name: 'join', ...options },
    );
  }
}

/** `a.join(b)` and `a.coGroup(b)` alike: the two streams, then the keys, then the window (Flink's JoinedStreams and CoGroupedStreams). */
abstract class TwoStreamsImpl<T1, T2> {
  readonly #factory: StreamFactory;
  readonly #first: DataStream<T1>;
  readonly #second: DataStream<T2>;

  constructor(factory: StreamFactory, first: DataStream<T1>, second: DataStream<T2>) {
    this.#factory = factory;
    this.#first = first;
    this.#second = second;
  }

  /** `where(keyOfFirst).equalTo(keyOfSecond).window(assigner)`, ending in a window of `Window`'s class. */
  protected whereClause<K extends KeyLike>(keyOfFirst: (value: T1) => K, Window: WindowClass<T1, T2>): unknown {
    return {
      equalTo: (keyOfSecond: (value: T2) => K) => ({
        window: (assigner: WindowAssigner<unknown, Window>) => new Window(this.#factory, this.#first, this.#second, [keyOfFirst, keyOfSecond], { assigner }),
      }),
    };
  }
}

/** The class of a join's or coGroup's window. */
type WindowClass<T1, T2> = new (
  factory: StreamFactory,
  first: DataStream<T1>,
  second: DataStream<T2>,
  keys: [(value: T1) => KeyLike, (value: T2) => KeyLike],
  spec: WindowSpec<Window>,
) => unknown;

/** The {@link JoinedStreams} of a job's graph. */
export class JoinedStreamsImpl<T1, T2> extends TwoStreamsImpl<T1, T2> implements JoinedStreams<T1, T2> {
  where<K extends KeyLike>(keyOfFirst: (value: T1) => K): ReturnType<JoinedStreams<T1, T2>['where']> {
    return this.whereClause(keyOfFirst, JoinedWindowImpl as WindowClass<T1, T2>) as ReturnType<JoinedStreams<T1, T2>['where']>;
  }
}

/** The {@link CoGroupedStreams} of a job's graph. */
export class CoGroupedStreamsImpl<T1, T2> extends TwoStreamsImpl<T1, T2> implements CoGroupedStreams<T1, T2> {
  where<K extends KeyLike>(keyOfFirst: (value: T1) => K): ReturnType<CoGroupedStreams<T1, T2>['where']> {
    return this.whereClause(keyOfFirst, CoGroupedWindowImpl as WindowClass<T1, T2>) as ReturnType<CoGroupedStreams<T1, T2>['where']>;
  }
}
