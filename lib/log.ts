import winston from 'winston';

/** Field names whose values never reach a log line. */
const secretFields =
  /^(authorization|cookie|set-cookie|x-svc-authorization|password|secret|token|key|auth|apikey|api_key|license(key)?|svc_auth|svc_operator_licensekey)$/i;

/** Replaces the values of secret-looking fields, at any depth, with `[redacted]`. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return { name: value.name, message: value.message };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = secretFields.test(k) ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (key === 'level' || key === 'message') continue;
    info[key] = secretFields.test(key) ? '[redacted]' : redact(info[key]);
  }
  return info;
});

/** A structured logger: fixed lower-case messages, data in fields. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line (per component, per reconcile, per request). */
  child(fields: Record<string, unknown>): Logger;
}

class WinstonLogger implements Logger {
  readonly #w: winston.Logger;
  constructor(w: winston.Logger) {
    this.#w = w;
  }
  debug(message: string, fields?: Record<string, unknown>): void {
    this.#w.debug(message, fields);
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.#w.info(message, fields);
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.#w.warn(message, fields);
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.#w.error(message, fields);
  }
  child(fields: Record<string, unknown>): Logger {
    return new WinstonLogger(this.#w.child(redact(fields) as Record<string, unknown>));
  }
}

/** Log levels, most severe first. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
/** One of LOG_LEVELS. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The root logger of a process: JSON lines on stderr. */
export function createLogger(opts: { component: string; level?: LogLevel; silent?: boolean }): Logger {
  const w = winston.createLogger({
    level: opts.level ?? 'info',
    silent: opts.silent ?? false,
    defaultMeta: { component: opts.component },
    format: winston.format.combine(redactFormat(), winston.format.timestamp(), winston.format.json()),
    // winston's Console is a TransportStream; the rule trips on the two copies of its typings.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
    transports: [new winston.transports.Console({ stderrLevels: [...LOG_LEVELS] })],
  });
  return new WinstonLogger(w);
}

/** A logger that drops everything, for tests that don't look at logs. */
export function silentLogger(): Logger {
  return createLogger({ component: 'test', silent: true });
}
