/** Nesting below which {@link checkCloneable} walks without remembering objects (a cycle is found once it goes deeper). */
const CYCLE_CHECK_DEPTH = 32;

/**
 * Throws for what structured clone (the heap backend's snapshot, node:v8) refuses and msgpackr
 * would write silently: functions and symbols, anywhere in the value. Cycles are allowed: deeper
 * than {@link CYCLE_CHECK_DEPTH}, `seen` holds the objects on the way down (no allocation for
 * the usual shallow value).
 */
export function checkCloneable(value: unknown, depth = 0, seen?: Set<object>): void {
  switch (typeof value) {
    case 'function':
      throw new Error('a function cannot be cloned');
    case 'symbol':
      throw new Error('a symbol cannot be cloned');
    case 'object':
      break;
    default:
      return;
  }
  if (value === null || ArrayBuffer.isView(value) || value instanceof Date) return;
  const path = seen ?? (depth >= CYCLE_CHECK_DEPTH ? new Set<object>() : undefined);
  if (path !== undefined) {
    if (path.has(value)) return;
    path.add(value);
  }
  const next = depth + 1;
  if (Array.isArray(value)) {
    for (const element of value)
      if (typeof element === 'object' || typeof element === 'function' || typeof element === 'symbol') checkCloneable(element, next, path);
  } else if (value instanceof Map) {
    for (const [key, entry] of value) {
      checkCloneable(key, next, path);
      checkCloneable(entry, next, path);
    }
  } else if (value instanceof Set) {
    for (const element of value) checkCloneable(element, next, path);
  } else {
    for (const key in value as object) checkCloneable((value as Record<string, unknown>)[key], next, path);
  }
  path?.delete(value);
}
