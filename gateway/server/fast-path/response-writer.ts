/**
 * What the fast path writes to a client itself: the answer to a refusal or an upstream failure,
 * as node:http's `respondError` writes it, and the header lines the gateway adds to a relayed
 * response (the context's response headers, `date`, the connection's).
 */
import { STATUS_CODES } from 'node:http';
import { errorBody, withoutBody } from '../../pipeline/compose.ts';
import type { GatewayError } from '../../pipeline/errors.ts';
import { BAD_VALUE, TOKEN } from './head-parser.ts';

/**
 * Header lines for fields the gateway adds (the context's response headers, an error's headers).
 * A name or value that could not be sent as it is (line breaks, control characters) is left out,
 * where node:http would throw.
 */
export function headerLines(fields: Readonly<Record<string, string>>): string {
  let out = '';
  for (const name in fields) {
    const value = fields[name] ?? '';
    if (TOKEN.test(name) && !BAD_VALUE.test(value)) out += `${name}: ${value}\r\n`;
  }
  return out;
}

/**
 * The answer to a refusal or an upstream failure, as node:http's `respondError` writes it: the
 * error's status, the context's response headers, the error's headers, `{"error": message}` as
 * JSON (or an answer's body, text or bytes); no body for HEAD.
 */
export function errorResponse(
  error: GatewayError,
  added: Readonly<Record<string, string>>,
  keepAlive: boolean,
  head: boolean,
): string | Buffer {
  const body = errorBody(error);
  const status = error.status;
  // An answer (`respond`, pipeline/compose.ts) brings its own content type, if any.
  const type = error.replyBody === undefined ? 'content-type: application/json\r\n' : '';
  const empty = withoutBody(status);
  const text =
    `HTTP/1.1 ${String(status)} ${STATUS_CODES[status] ?? ''}\r\n${headerLines({ ...added, ...error.headers })}` +
    `${type}${empty ? '' : `content-length: ${String(error.replyLength ?? Buffer.byteLength(body))}\r\n`}` +
    `date: ${httpDate()}\r\n${connectionLines(keepAlive)}`;
  if (head || empty) return text;
  // A body of bytes (a gzipped file) goes as it is, after the head written as text would be.
  return typeof body === 'string' ? text + body : Buffer.concat([Buffer.from(text), body]);
}

/** The last lines of a response head: whether the connection goes on (as node:http says it). */
export function connectionLines(keepAlive: boolean): string {
  return keepAlive ? 'connection: keep-alive\r\nkeep-alive: timeout=65\r\n\r\n' : 'connection: close\r\n\r\n';
}

let dateCache = '';
let dateSecond = 0;
/** The `date` header's value, formatted once per second. */
export function httpDate(): string {
  const s = Math.floor(Date.now() / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateCache = new Date(s * 1000).toUTCString();
  }
  return dateCache;
}
