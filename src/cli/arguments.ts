import { InvalidArgumentError } from 'commander';
import { WeirError } from '../core/errors/weir-error.ts';
import { parseDuration } from '../core/time/duration.ts';

/** Commander argument parsers: each turns bad input into one clear message naming the fix. */

export function portArgument(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) throw new InvalidArgumentError('give a TCP port from 1 to 65535.');
  return port;
}

export function positiveIntegerArgument(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1) throw new InvalidArgumentError('give a whole number of 1 or more.');
  return number;
}

export function nonNegativeIntegerArgument(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(number)) throw new InvalidArgumentError('give a whole number of 0 or more.');
  return number;
}

export function durationArgument(value: string): number {
  try {
    return parseDuration(value, 'duration');
  } catch (error) {
    throw new InvalidArgumentError(error instanceof WeirError && error.hint ? `${error.hint}.` : 'not a duration.');
  }
}
