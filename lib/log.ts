import { hash } from 'node:crypto';
import winston from 'winston';

/** Field names whose values never reach a log line. */
const secretFields =
  /^(authorization|cookie|set-cookie|x-svc-authorization|password|secret|token|key|auth|apikey|api_key|license(key)?|svc_auth|svc_operator_licensekey)$/i;

/**
 * Query parameters whose values never reach a log line: the names of `secretFields` and any
 * name that says token, secret, password, signature, session, credential or auth (`api_key`,
 * `access_token`, `X-Amz-Signature`, `client_secret`, `authorization`...), `key`, `code` and
 * `sig`. Matched on the name with `-`, `_` and `.` removed, in any case.
 */
const secretParamWords =
  /token|secret|passw|pwd|signature|session|credential|auth(?!ors?$)|jwt|apikey|accesskey|privatekey/;
const secretParamNames = new Set(['key', 'code', 'sig', 'pass', 'license', 'licensekey']);

function secretParam(name: string): boolean {
  let n = name.toLowerCase().replace(/[-_.]/g, '');
  try {
    n = decodeURIComponent(n);
  } catch {
    // Not percent-encoded as it should be: the name as it is.
  }
  return secretParamNames.has(n) || secretParamWords.test(n);
}

/** A quick look before the expressions below: nothing of a URL's secrets can be in the text. */
const MAYBE_URL_SECRET = /[?#@]|\/keys\//i;
/** Credentials in a URL: `scheme://user:password@` or `scheme://token@`. */
const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@"'<>\\]*)@/gi;
/** A query (or fragment) parameter: separator, name, value. */
const PARAM = /([?&#])([^=&#\s"'<>\\]+)=([^&#\s"'<>\\]*)/g;
/**
 * A key's clear value in a path: `/svc/keys/{key}` (the gateway's management API) and
 * `/api/keys/{key}` (the dashboard), with or without `/reset` after it; `/svc/keys/create`
 * names no key. A colon that ends a line's word (`GET /svc/keys/k: 404`) is not the key's.
 */
const KEY_SEGMENT =
  /(\/(?:svc|api)\/+keys\/+)(?!create(?=[/?#\s"'<>\\]|$))([^/?#\s"'<>\\]+?)(?=[/?#\s"'<>\\]|:\s|:?$)/gi;
const HASHED_ID = /^[0-9a-f]{64}$/;
const HASHED_QUERY = /^[^\s"'<>\\#]*[?&]hashed=true(?:[&#\s"'<>\\]|$)/;

/**
 * `text` (a URL, a path, or a line that holds some) with the secrets a URL can carry replaced:
 * a key in the path of `/svc/keys/{key}` or `/api/keys/{key}` by `[redacted:<hash>]`, the first
 * 12 characters of the key's stored ID (the SHA-256 the gateway and the dashboard log as
 * `key_hash`), so a line can still be matched to its key; the password of `user:password@` (or
 * a lone `token@`) and the value of a secret-looking query parameter by `[redacted]`. With
 * `allParams` every query value is redacted (a configured URL whose parameters may all be
 * credentials: a JWKS or webhook URL). A path named by its stored ID (`?hashed=true`) is kept.
 */
export function redactUrl(text: string, opts: { allParams?: boolean } = {}): string {
  if (!MAYBE_URL_SECRET.test(text)) return text;
  return text
    .replace(USERINFO, (_m, scheme: string, info: string) => {
      const colon = info.indexOf(':');
      return colon === -1 ? `${scheme}[redacted]@` : `${scheme}${info.slice(0, colon)}:[redacted]@`;
    })
    .replace(KEY_SEGMENT, (m, before: string, segment: string, offset: number, all: string) => {
      const rest = all.slice(offset + m.length);
      if (HASHED_ID.test(segment) && HASHED_QUERY.test(rest)) return m;
      let raw = segment;
      try {
        raw = decodeURIComponent(segment);
      } catch {
        // The path does not decode: the server answers 404 and the segment is hashed as it is.
      }
      return `${before}[redacted:${hash('sha256', raw, 'hex').slice(0, 12)}]`;
    })
    .replace(PARAM, (m, sep: string, name: string) =>
      opts.allParams === true || secretParam(name) ? `${sep}${name}=[redacted]` : m,
    );
}

/**
 * Replaces the values of secret-looking fields, at any depth, with `[redacted]`, and the secrets
 * a URL can carry in every string (`redactUrl`).
 */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactUrl(value);
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return { name: value.name, message: redactUrl(value.message) };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = secretFields.test(k) ? '[redacted]' : redact(v, depth + 1);
  }
  return out;
}

const redactFormat = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (key === 'level') continue;
    info[key] = key !== 'message' && secretFields.test(key) ? '[redacted]' : redact(info[key]);
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
