/** The levels Weir logs at, least to most severe. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** How log lines look: `pretty` (time, level, message; for people) or `json` (one object a line: level, time, msg; for collectors). */
export type LogFormat = 'pretty' | 'json';

/** Extra fields of a log line (in JSON output, beside `msg`). */
export type LogFields = Record<string, unknown>;

/** What Weir logs through: leveled, each line with a time (see pino-logger.ts for the one implementation). */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  isLevelEnabled(level: LogLevel): boolean;
  /** A logger whose every line carries these fields too (an operator's name, a subtask). */
  child(fields: LogFields): Logger;
}

/** A logger from a line callback (the older `log: (line) => void` option): info and above, the message only. */
export function lineLogger(write: (line: string) => void, level: LogLevel = 'info'): Logger {
  const from = LOG_LEVELS.indexOf(level);
  const at = (lineLevel: LogLevel) => (message: string) => {
    if (LOG_LEVELS.indexOf(lineLevel) >= from) write(message);
  };
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    isLevelEnabled: (lineLevel) => LOG_LEVELS.indexOf(lineLevel) >= from,
    child: () => logger,
  };
  return logger;
}

/** A logger that drops everything. */
export const silentLogger: Logger = lineLogger(() => {}, 'error');

/** Either form a caller may pass: a Logger, or a line callback. */
export function toLogger(log: Logger | ((line: string) => void) | undefined): Logger {
  if (log === undefined) return silentLogger;
  return typeof log === 'function' ? lineLogger(log) : log;
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}
