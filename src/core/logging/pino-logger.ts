import { createRequire } from 'node:module';
import pino from 'pino';
import type PinoPretty from 'pino-pretty';
import { WeirError } from '../errors/weir-error.ts';
import { isLogLevel, type LogFields, type LogFormat, type Logger, type LogLevel } from './logger.ts';

export interface PinoLoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Where lines go: a file descriptor, default 2 (stderr). */
  destination?: number;
}

/** Paths of fields that never reach a log line (connection secrets). */
const REDACTED = ['*.password', '*.sasl', '*.key', '*.cert', '*.token', 'password', 'sasl', 'key', 'token', 'connection.sasl', 'connection.tls'];

/** A pino logger writing synchronously to stderr (so the last lines before an exit are never lost), pretty or JSON. */
export function createPinoLogger(options: PinoLoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const destination = options.destination ?? 2;
  const stream =
    (options.format ?? 'pretty') === 'json'
      ? pino.destination({ dest: destination, sync: true })
      : loadPretty()({ destination, sync: true, colorize: false, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  return wrap(pino({ level, base: undefined, redact: { paths: REDACTED, censor: '[redacted]' } }, stream));
}

/**
 * pino-pretty (about 30 modules) loads only where a pretty logger is made: a JSON log, and every
 * worker thread that never logs, skip it (synchronous: loggers are made synchronously).
 */
function loadPretty(): typeof PinoPretty {
  return createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
}

function wrap(logger: pino.Logger): Logger {
  return {
    debug: (message, fields) => (fields === undefined ? logger.debug(message) : logger.debug(fields, message)),
    info: (message, fields) => (fields === undefined ? logger.info(message) : logger.info(fields, message)),
    warn: (message, fields) => (fields === undefined ? logger.warn(message) : logger.warn(fields, message)),
    error: (message, fields) => (fields === undefined ? logger.error(message) : logger.error(fields, message)),
    isLevelEnabled: (level) => logger.isLevelEnabled(level),
    child: (fields: LogFields) => wrap(logger.child(fields)),
  };
}

/**
 * The log settings from the environment: WEIR_LOG_LEVEL (debug, info, warn, error; default info)
 * and WEIR_LOG_FORMAT (pretty or json; default pretty). A bad value is one clear error.
 */
export function logSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): { level: LogLevel; format: LogFormat } {
  const level = env.WEIR_LOG_LEVEL || 'info';
  const format = env.WEIR_LOG_FORMAT || 'pretty';
  if (!isLogLevel(level)) {
    throw new WeirError('INVALID_CONFIG', `WEIR_LOG_LEVEL is "${level}", not a log level`, { hint: 'set it to debug, info, warn or error' });
  }
  if (format !== 'pretty' && format !== 'json') {
    throw new WeirError('INVALID_CONFIG', `WEIR_LOG_FORMAT is "${format}", not a log format`, { hint: 'set it to pretty or json' });
  }
  return { level, format };
}

let processLogger: Logger | undefined;

/**
 * The process's logger, for code that has no logger handed to it (connectors, in the main thread
 * and in worker threads alike): made from WEIR_LOG_LEVEL and WEIR_LOG_FORMAT on first use. `weir
 * run` sets both from its options before any worker starts, and workers inherit them.
 */
export function processLog(): Logger {
  processLogger ??= createPinoLogger(logSettingsFromEnv());
  return processLogger;
}
