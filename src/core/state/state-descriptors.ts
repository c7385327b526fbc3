import { WeirError } from '../errors/weir-error.ts';
import type { AggregatingState, ListState, MapState, ReducingState, StateKind, ValueState } from './state-types.ts';

/**
 * Flink's state descriptors: a state's name (unique within an operator) and kind, plus the
 * functions reducing and aggregating state need. A descriptor is plain data, so it can be built once
 * at module level and passed to `getState` on every record.
 */

/**
 * What every descriptor has. `S` is the state object `getState` gives for it (e.g.
 * `ValueState<number>`), carried by the never-set `stateType` so `getState` can infer it.
 */
export interface StateDescriptor<S = unknown> {
  readonly kind: StateKind;
  readonly name: string;
  /** Its time to live, set with `enableTimeToLive` (state-ttl-config.ts). */
  readonly ttl?: StateTtl;
  /** Never set: carries the type of the state this descriptor gives. */
  readonly stateType?: S;
}

export interface ValueStateDescriptor<T> extends StateDescriptor<ValueState<T>> {
  readonly kind: 'value';
  /** What `value()` returns for a key without a value; shared between keys, so do not mutate it. */
  readonly defaultValue?: T;
}

export interface ListStateDescriptor<T> extends StateDescriptor<ListState<T>> {
  readonly kind: 'list';
}

export interface MapStateDescriptor<K, V> extends StateDescriptor<MapState<K, V>> {
  readonly kind: 'map';
}

export interface ReducingStateDescriptor<T> extends StateDescriptor<ReducingState<T>> {
  readonly kind: 'reducing';
  readonly reduce: (a: T, b: T) => T;
}

/** Flink's `AggregateFunction`: how aggregating state folds values into an accumulator. */
export interface AggregateFunction<IN, ACC, OUT> {
  readonly createAccumulator: () => ACC;
  readonly add: (value: IN, accumulator: ACC) => ACC;
  readonly getResult: (accumulator: ACC) => OUT;
}

export interface AggregatingStateDescriptor<IN, ACC, OUT> extends StateDescriptor<AggregatingState<IN, OUT>>, AggregateFunction<IN, ACC, OUT> {
  readonly kind: 'aggregating';
}

/** A TTL as the state backend runs it (made from a StateTtlConfig by `enableTimeToLive`). */
export interface StateTtl {
  readonly ttlMs: number;
  readonly updateOnRead: boolean;
  readonly returnExpired: boolean;
  readonly cleanupFullSnapshot: boolean;
  /** Entries checked per access; 0: no incremental cleanup. */
  readonly incrementalSize: number;
  readonly incrementalEveryRecord: boolean;
}

/** Any of the five descriptors, discriminated by `kind` (element types erased). */
export type AnyStateDescriptor =
  | ValueStateDescriptor<unknown>
  | ListStateDescriptor<unknown>
  | MapStateDescriptor<unknown, unknown>
  | ReducingStateDescriptor<unknown>
  | AggregatingStateDescriptor<unknown, unknown, unknown>;

function checkName(name: string, kind: StateKind): void {
  if (typeof name !== 'string' || name.length === 0) {
    throw new WeirError('INVALID_STATE_NAME', `a ${kind} state descriptor needs a name, got ${JSON.stringify(name)}`, {
      hint: 'give every state a non-empty name, unique within its operator; it identifies the state in checkpoints',
    });
  }
}

export function checkFunction(value: unknown, what: string, name: string, kind: StateKind): void {
  if (typeof value !== 'function') {
    throw new WeirError('INVALID_STATE_DESCRIPTOR', `${kind} state "${name}": ${what} is not a function`, {
      hint: `pass ${what} as a function`,
    });
  }
}

export function valueState<T>(name: string, defaultValue?: T): ValueStateDescriptor<T> {
  checkName(name, 'value');
  return defaultValue === undefined ? { kind: 'value', name } : { kind: 'value', name, defaultValue };
}

export function listState<T>(name: string): ListStateDescriptor<T> {
  checkName(name, 'list');
  return { kind: 'list', name };
}

export function mapState<K, V>(name: string): MapStateDescriptor<K, V> {
  checkName(name, 'map');
  return { kind: 'map', name };
}

export function reducingState<T>(name: string, reduce: (a: T, b: T) => T): ReducingStateDescriptor<T> {
  checkName(name, 'reducing');
  checkFunction(reduce, 'reduce', name, 'reducing');
  return { kind: 'reducing', name, reduce };
}

export function aggregatingState<IN, ACC, OUT>(name: string, aggregate: AggregateFunction<IN, ACC, OUT>): AggregatingStateDescriptor<IN, ACC, OUT> {
  checkName(name, 'aggregating');
  checkFunction(aggregate.createAccumulator, 'createAccumulator', name, 'aggregating');
  checkFunction(aggregate.add, 'add', name, 'aggregating');
  checkFunction(aggregate.getResult, 'getResult', name, 'aggregating');
  return { kind: 'aggregating', name, createAccumulator: aggregate.createAccumulator, add: aggregate.add, getResult: aggregate.getResult };
}
