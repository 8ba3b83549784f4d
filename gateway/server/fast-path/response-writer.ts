/**
 * What the fast path writes to a client itself: the answer to a refusal or an upstream failure,
 * as node:http's `respondError` writes it, and the head of a relayed upstream response (the
 * upstream's headers by the rules node:http's path follows, the context's response headers,
 * `date`, the connection's).
 */
import { STATUS_CODES } from 'node:http';
import { errorBody, withoutBody } from '../../pipeline/compose.ts';
import type { GatewayError } from '../../pipeline/errors.ts';
import { addedResponseHeaders, connectionTokens, relaysResponseHeader } from '../../upstream/headers.ts';
import { BAD_VALUE, TOKEN } from './head-parser.ts';
import type { ResponseHead } from './upstream-response.ts';

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

/**
 * The head of a relayed upstream response as the client gets it: the upstream's status line and
 * the headers it may relay (upstream/headers.ts: not hop-by-hop nor named by its Connection, not
 * the gateway's own nor one the chain removed), the gateway's response headers (`added`, their
 * Vary joined with the upstream's), `transfer-encoding: chunked` for a chunked body, `date` when
 * the upstream sent none, and the connection's lines.
 */
export function relayedHead(
  head: ResponseHead,
  added: Readonly<Record<string, string>>,
  removed: ReadonlySet<string> | undefined,
  chunked: boolean,
  keepAlive: boolean,
  /** Names of `added` sent after the upstream's lines of that header, not instead. */
  appended?: ReadonlySet<string>,
): string {
  const { connValues } = head;
  const extra = connValues.length === 0 ? undefined : connectionTokens(connValues);
  let out = `HTTP/1.1 ${String(head.status)} ${head.reason}\r\n`;
  let vary: string[] | undefined;
  for (const h of head.headers) {
    if (h.lower === 'vary' && extra?.has('vary') !== true) (vary ??= []).push(h.value);
    if (!relaysResponseHeader(h.lower, extra, added, removed, appended)) continue;
    out += `${h.raw}: ${h.value}\r\n`;
  }
  out += headerLines(vary === undefined ? added : addedResponseHeaders(added, vary, removed));
  if (chunked) out += 'transfer-encoding: chunked\r\n';
  if (!head.date) out += `date: ${httpDate()}\r\n`;
  return out + connectionLines(keepAlive);
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
