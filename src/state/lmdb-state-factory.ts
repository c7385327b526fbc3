import { WeirError } from '../core/errors/weir-error.ts';
import { type AggregatingStateDescriptor, type AnyStateDescriptor, checkFunction } from '../core/state/state-descriptors.ts';
import type { AggregatingState, ListState, MapState, ReducingState, ValueState } from '../core/state/state-types.ts';
import { TtlAggregatingState, TtlListState, TtlReducingState, TtlValueState } from './heap-ttl-states.ts';
import { LmdbAggregatingState, LmdbListState, LmdbMapState, LmdbReducingState, LmdbValueState } from './lmdb-keyed-states.ts';
import type { LmdbStateTable } from './lmdb-state-table.ts';
import { LmdbTtlMapState } from './lmdb-ttl-states.ts';

/** Any keyed state object of the disk backend (element types erased). */
export type LmdbKeyedState =
  | ValueState<unknown>
  | ListState<unknown>
  | MapState<unknown, unknown>
  | ReducingState<unknown>
  | AggregatingState<unknown, unknown>;

/** The state object of `descriptor` over `table` (TTL-wrapped when the descriptor has a TTL). */
export function createLmdbState(descriptor: AnyStateDescriptor, table: LmdbStateTable): LmdbKeyedState {
  const ttl = descriptor.ttl;
  switch (descriptor.kind) {
    case 'value':
      return ttl === undefined ? new LmdbValueState(table, descriptor.defaultValue) : new TtlValueState(table, ttl, descriptor.defaultValue);
    case 'list':
      return ttl === undefined ? new LmdbListState(table) : new TtlListState(table, ttl);
    case 'map':
      return ttl === undefined ? new LmdbMapState(table) : new LmdbTtlMapState(table, ttl);
    case 'reducing':
      checkFunction(descriptor.reduce, 'reduce', descriptor.name, descriptor.kind);
      return ttl === undefined ? new LmdbReducingState(table, descriptor.reduce) : new TtlReducingState(table, ttl, descriptor.reduce);
    case 'aggregating':
      checkFunction(descriptor.createAccumulator, 'createAccumulator', descriptor.name, descriptor.kind);
      checkFunction(descriptor.add, 'add', descriptor.name, descriptor.kind);
      checkFunction(descriptor.getResult, 'getResult', descriptor.name, descriptor.kind);
      return ttl === undefined
        ? new LmdbAggregatingState(table, descriptor)
        : new TtlAggregatingState(table, ttl, descriptor as AggregatingStateDescriptor<unknown, unknown, unknown>);
    default:
      throw new WeirError(
        'INVALID_STATE_DESCRIPTOR',
        `state "${(descriptor as AnyStateDescriptor).name}" has unknown kind ${JSON.stringify((descriptor as AnyStateDescriptor).kind)}`,
        { hint: 'build descriptors with valueState, listState, mapState, reducingState or aggregatingState' },
      );
  }
}
