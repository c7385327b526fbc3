import ms from 'ms';
import { WeirError } from '../errors/weir-error.ts';

/**
 * Parses a duration given as milliseconds (a number or digits) or as text such as `500ms`, `10s`,
 * `15m`, `1h`. `setting` names the option in the error, so a bad value says where it came from.
 */
export function parseDuration(value: string | number, setting: string): number {
  let parsed: number | undefined;
  try {
    parsed = typeof value === 'number' ? value : /^\d+$/.test(value.trim()) ? Number(value) : ms(value as ms.StringValue);
  } catch {
    parsed = undefined; // ms throws on an empty string
  }
  if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed < 0) {
    throw new WeirError('INVALID_DURATION', `${setting}: "${value}" is not a duration`, {
      hint: `give milliseconds or a number with a unit, for example 500ms, 10s, 15m or 1h`,
    });
  }
  return Math.round(parsed);
}

/** A duration for people: 900000 -> "15m", 1500 -> "1.5s". */
export function formatDuration(milliseconds: number): string {
  return ms(milliseconds);
}
