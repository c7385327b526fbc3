import { WeirError } from '../errors/weir-error.ts';
import { parseDuration } from './duration.ts';

/**
 * Reads a time setting of the event-time API (a window size, a lateness, a bound): milliseconds,
 * or text such as `500ms`, `10s`, `1m`. A negative value (or zero, when `positive`) is one clear
 * error naming the setting and how to fix it.
 */
export function timeSetting(value: number | string, setting: string, options: { positive: boolean; fix: string }): number {
  const negative = (typeof value === 'number' && value < 0) || (typeof value === 'string' && value.trim().startsWith('-'));
  const parsed = negative ? Number.NaN : parseDuration(value, setting);
  if (negative || (options.positive && parsed <= 0)) {
    throw new WeirError('INVALID_TIME_SETTING', `${setting} must be ${options.positive ? 'above 0' : '0 or more'}, got ${JSON.stringify(value)}`, {
      hint: options.fix,
    });
  }
  return parsed;
}

/** Like {@link timeSetting}, for offsets and bounds that may be negative (a join's lower bound). */
export function signedTimeSetting(value: number | string, setting: string): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new WeirError('INVALID_TIME_SETTING', `${setting} must be a finite number of milliseconds, got ${value}`, {
        hint: 'give milliseconds or a duration such as "-5s"',
      });
    }
    return Math.round(value);
  }
  const text = value.trim();
  return text.startsWith('-') ? -parseDuration(text.slice(1), setting) : parseDuration(text, setting);
}
