import { WeirError } from '../errors/weir-error.ts';
import { parseDuration } from '../time/duration.ts';
import type { StateDescriptor, StateTtl } from './state-descriptors.ts';

/**
 * Time to live of a keyed state (Flink's StateTtlConfig), in processing time. Each value (a list's
 * element, a map's entry) carries the time it was last written, and read too with
 * `updateType: 'OnReadAndWrite'`; `ttl` after that it has expired.
 *
 * - `stateVisibility`: 'NeverReturnExpired' (default: an expired value reads as absent) or
 *   'ReturnExpiredIfNotCleanedUp' (it reads until a cleanup removed it).
 * - `cleanup.incremental` (default `{ size: 5 }`, as Flink's heap backend): each access of the state
 *   also checks `size` entries of it for expiry, and with `everyRecord` each record's key change
 *   does too. `false`: no incremental cleanup.
 * - `cleanup.fullSnapshot`: a checkpoint leaves expired values out.
 *
 * Expired values never come back from a checkpoint: a restore drops them.
 */
export interface StateTtlConfig {
  ttl: number | string;
  updateType?: 'OnCreateAndWrite' | 'OnReadAndWrite';
  stateVisibility?: 'NeverReturnExpired' | 'ReturnExpiredIfNotCleanedUp';
  cleanup?: { fullSnapshot?: boolean; incremental?: false | { size?: number; everyRecord?: boolean } };
}

/** `descriptor` with a time to live (Flink's `descriptor.enableTimeToLive(config)`): `enableTimeToLive(valueState<number>('count'), { ttl: '1h' })`. */
export function enableTimeToLive<D extends StateDescriptor>(descriptor: D, config: StateTtlConfig): D & { readonly ttl: StateTtl } {
  const setting = (field: string) => `${descriptor.kind} state "${descriptor.name}" ttl${field}`;
  const invalid = (field: string, what: string, hint: string) => new WeirError('INVALID_CONFIG', `${setting(field)}: ${what}`, { hint });
  if (typeof config !== 'object' || config === null || config.ttl === undefined) throw invalid('', 'needs { ttl }', "for example { ttl: '1h' }");
  const ttlMs = parseDuration(config.ttl, setting('.ttl'));
  if (ttlMs <= 0) throw invalid('.ttl', 'must be more than 0', "for example { ttl: '1h' }");
  const updateType = config.updateType ?? 'OnCreateAndWrite';
  if (updateType !== 'OnCreateAndWrite' && updateType !== 'OnReadAndWrite') {
    throw invalid(
      '.updateType',
      `must be 'OnCreateAndWrite' or 'OnReadAndWrite', not ${JSON.stringify(updateType)}`,
      'OnReadAndWrite also counts reads as use',
    );
  }
  const visibility = config.stateVisibility ?? 'NeverReturnExpired';
  if (visibility !== 'NeverReturnExpired' && visibility !== 'ReturnExpiredIfNotCleanedUp') {
    throw invalid(
      '.stateVisibility',
      `must be 'NeverReturnExpired' or 'ReturnExpiredIfNotCleanedUp', not ${JSON.stringify(visibility)}`,
      'the default never returns an expired value',
    );
  }
  const incremental = config.cleanup?.incremental ?? {};
  const incrementalSize = incremental === false ? 0 : (incremental.size ?? 5);
  if (!Number.isInteger(incrementalSize) || incrementalSize < 0) {
    throw invalid(
      '.cleanup.incremental.size',
      `must be a whole number of at least 0, not ${JSON.stringify(incrementalSize)}`,
      'Flink checks 5 entries per access',
    );
  }
  const ttl: StateTtl = {
    ttlMs,
    updateOnRead: updateType === 'OnReadAndWrite',
    returnExpired: visibility === 'ReturnExpiredIfNotCleanedUp',
    cleanupFullSnapshot: config.cleanup?.fullSnapshot === true,
    incrementalSize,
    incrementalEveryRecord: incremental !== false && incremental.everyRecord === true,
  };
  return { ...descriptor, ttl };
}
