import type { KeySelector } from '../core/functions/key-selector.ts';
import type { KeyedProcessFunction } from '../core/functions/process-functions.ts';
import { valueState } from '../core/state/state-descriptors.ts';
import type { KeyLike, StateKey } from '../core/state/state-key.ts';
import type { ValueState } from '../core/state/state-types.ts';
import type { GlobalWindow, Window } from '../core/windowing/window.ts';
import type { WindowAssigner } from '../core/windowing/window-assigner.ts';
import { KeyedProcessOperator } from '../runtime/operators/keyed-process-operator.ts';
import { BroadcastConnectedStreamImpl, BroadcastStreamImpl } from './broadcast-connected-streams-impl.ts';
import type {
  BroadcastStream,
  ConnectedStreams,
  DataStream,
  IntervalJoin,
  KeyedBroadcastConnectedStream,
  KeyedStream,
  SingleOutputStreamOperator,
  WindowedStream,
} from './data-stream.ts';
import { DataStreamImpl } from './data-stream-impl.ts';
import { errorPolicyOf, type ProcessingOptions } from './stream-transformations.ts';
import { CountTrigger } from './windowing/count-trigger.ts';
import { GlobalWindows } from './windowing/global-windows.ts';
import { PurgingTrigger } from './windowing/purging-trigger.ts';

/** The {@link KeyedStream} of a job's graph. */
export class KeyedStreamImpl<T, K extends KeyLike> extends DataStreamImpl<T> implements KeyedStream<T, K> {
  override process<R>(fn: KeyedProcessFunction<K, T, R>, options: ProcessingOptions = {}): SingleOutputStreamOperator<R> {
    const keySelector = this.upstream.keySelector as KeySelector<T>;
    const onError = errorPolicyOf(options, 'process');
    return this.transform<R>('process', () => new KeyedProcessOperator<K, T, R>(fn, keySelector, onError), options);
  }

  reduce(reduce: (accumulated: T, value: T) => T, options: ProcessingOptions = {}): SingleOutputStreamOperator<T> {
    let state: ValueState<T>;
    return this.process<T>(
      {
        open(context) {
          state = context.getState(valueState<T>('reduce'));
        },
        processElement(value, _context, out) {
          const previous = state.value();
          const next = previous === undefined ? value : reduce(previous, value);
          state.update(next);
          out.collect(next);
        },
      },
      { name: 'reduce', ...options },
    );
  }

  override connect<T2>(other: DataStream<T2>): ConnectedStreams<T, T2>;
  override connect<T2>(other: BroadcastStream<T2>): KeyedBroadcastConnectedStream<T, K, T2>;
  override connect<T2>(other: DataStream<T2> | BroadcastStream<T2>): ConnectedStreams<T, T2> | KeyedBroadcastConnectedStream<T, K, T2> {
    if (other instanceof BroadcastStreamImpl)
      return new BroadcastConnectedStreamImpl<T, T2>(this.factory, this.upstream, other) as unknown as KeyedBroadcastConnectedStream<T, K, T2>;
    return super.connect(other as DataStream<T2>);
  }

  window<W extends Window>(assigner: WindowAssigner<T, W> | WindowAssigner<unknown, W>): WindowedStream<T, K, W> {
    return this.factory.windowedStream<T, K, W>(this.upstream, assigner as WindowAssigner<T, W>);
  }

  countWindow(size: number): WindowedStream<T, K, GlobalWindow> {
    return this.window(GlobalWindows.create()).trigger(PurgingTrigger.of(CountTrigger.of(size)));
  }

  intervalJoin<T2>(other: KeyedStream<T2, K>): IntervalJoin<T, T2, K> {
    return this.factory.intervalJoin<T, T2, K>(this, other);
  }
}
