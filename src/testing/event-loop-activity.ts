/** How many of each kind of resource keep Node's event loop alive (timers, sockets, file requests...). */
export type EventLoopResources = ReadonlyMap<string, number>;

export function eventLoopResources(): EventLoopResources {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/**
 * Whether the event loop holds more of some kind of resource than it did at `baseline`: a timer, a
 * socket or a request that an async call in flight may be waiting on. Without one, a call that has
 * not answered waits on nothing but its timeout: on the test driver's clock, that is the test's move.
 */
export function eventLoopBusierThan(baseline: EventLoopResources): boolean {
  for (const [kind, count] of eventLoopResources()) if (count > (baseline.get(kind) ?? 0)) return true;
  return false;
}
