/**
 * The fast path's request-head parser: strict on purpose. It takes the heads it is sure of (the
 * common shape of an HTTP/1.1 request without a chunked body) and answers undefined for anything
 * else, so node:http decides about it (and answers 400 or 431 to what it finds malformed). A head
 * this parser takes is one node:http would take the same way: the same headers, joined the same
 * way, the same body length. The rows of head-parser.test.ts are its specification.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { splitTarget } from '../../pipeline/url.ts';

/** node:http's default maxHeaderSize: a longer head goes to node:http (which answers 431). */
export const MAX_HEAD = 16_384;

const METHODS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'POST', 'PUT', 'PATCH']);
/** The longest of `METHODS`. */
const LONGEST_METHOD = 7;
/** An origin-form request target in visible ASCII: node:http refuses other bytes (400). */
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;
/** A header name (RFC 9110 token). */
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A control character in a header value (HTAB is allowed). */
// eslint-disable-next-line no-control-regex
export const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
/** A character that is never sent in an upstream request target (exchange.ts). */
// eslint-disable-next-line no-control-regex
export const BAD_TARGET = /[\x00-\x20\x7f]/;
/** A Content-Length value. */
export const DIGITS = /^\d{1,15}$/;

/** A request head the fast path serves. */
export interface ParsedHead {
  method: string;
  path: string;
  query: string;
  /** Lower-case names, repeated headers joined as node:http joins them (`addHeader`). */
  headers: IncomingHttpHeaders;
  host: string;
  /** Body length (0 without Content-Length). */
  contentLength: number;
  /** Whether the client sent Content-Length (forwarded as it came, even 0). */
  hasLength: boolean;
  close: boolean;
}

/**
 * Headers of which node:http keeps the first when repeated (lib/_http_incoming.js,
 * `matchKnownFields`); `set-cookie` is a list, `cookie` joined with `; `, others with `, `.
 * Middleware see the same `ctx.headers` on both entrances.
 */
const FIRST_WINS = new Set([
  'content-type',
  'content-length',
  'user-agent',
  'referer',
  'host',
  'authorization',
  'proxy-authorization',
  'if-modified-since',
  'if-unmodified-since',
  'from',
  'location',
  'max-forwards',
  'retry-after',
  'etag',
  'last-modified',
  'server',
  'age',
  'expires',
]);

/** Adds a header as node:http does (`FIRST_WINS`): for request heads and the response tap. */
export function addHeader(headers: IncomingHttpHeaders, name: string, value: string): void {
  const had = headers[name];
  if (had === undefined) headers[name] = name === 'set-cookie' ? [value] : value;
  else if (FIRST_WINS.has(name)) return;
  else if (typeof had !== 'string') had.push(value);
  else headers[name] = `${had}${name === 'cookie' ? '; ' : ', '}${value}`;
}

/** A header value without the optional whitespace around it (SP and HTAB only, as llhttp). */
function owsTrimmed(line: string, from: number): string {
  let a = from;
  let b = line.length;
  while (a < b && (line.charCodeAt(a) === 32 || line.charCodeAt(a) === 9)) a++;
  while (b > a && (line.charCodeAt(b - 1) === 32 || line.charCodeAt(b - 1) === 9)) b--;
  return line.slice(a, b);
}

/**
 * Where the request head at the start of `buf` ends: the index of its CRLF CRLF; -1 while more
 * bytes may complete it; -2 when the fast path will not take it whatever follows (too long, or
 * not the start of a head it takes).
 */
export function headEnd(buf: Buffer): number {
  const end = buf.indexOf('\r\n\r\n');
  if (end === -1) return buf.length > MAX_HEAD || !mayBecomeHead(buf) ? -2 : -1;
  return end <= MAX_HEAD ? end : -2;
}

/**
 * Whether the bytes of a head not complete yet may still become one the fast path takes: they
 * start with one of its methods, and every line so far ends in CRLF. Otherwise node:http decides
 * now: a client whose lines end in a bare LF (or one speaking TLS on a plain port) would wait for
 * a CRLF CRLF that never comes, until the connection's idle timeout, where node:http answers at
 * once. Only incomplete heads are looked at, so a head that comes in one read costs nothing more.
 */
function mayBecomeHead(buf: Buffer): boolean {
  const sp = buf.indexOf(32);
  if (sp === -1) {
    if (buf.length > LONGEST_METHOD) return false;
    for (const c of buf) if (c < 65 || c > 90) return false;
  } else if (!METHODS.has(buf.toString('latin1', 0, sp))) return false;
  for (let i = buf.indexOf(10); i !== -1; i = buf.indexOf(10, i + 1)) {
    if (i === 0 || buf[i - 1] !== 13) return false;
  }
  for (let i = buf.indexOf(13); i !== -1 && i + 1 < buf.length; i = buf.indexOf(13, i + 1)) {
    if (buf[i + 1] !== 10) return false;
  }
  return true;
}

/**
 * Parses a request head (without its final CRLF CRLF). Undefined when the request is not for the
 * fast path, or when anything about it is unusual: node:http then decides.
 */
export function parseRequestHead(text: string): ParsedHead | undefined {
  const lines = text.split('\r\n');
  const first = lines[0] ?? '';
  const sp1 = first.indexOf(' ');
  const sp2 = first.lastIndexOf(' ');
  if (sp1 <= 0 || sp2 === sp1) return undefined;
  const method = first.slice(0, sp1);
  const target = first.slice(sp1 + 1, sp2);
  if (!METHODS.has(method) || first.slice(sp2 + 1) !== 'HTTP/1.1') return undefined;
  if (!ORIGIN_FORM.test(target)) return undefined;
  const headers: IncomingHttpHeaders = {};
  let host: string | undefined;
  let contentLength = -1;
  let close = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const raw = line.slice(0, colon);
    if (!TOKEN.test(raw)) return undefined;
    const value = owsTrimmed(line, colon + 1);
    if (BAD_VALUE.test(value)) return undefined;
    const lower = raw.toLowerCase();
    switch (lower) {
      case '__proto__':
        return undefined;
      case 'host':
        if (host !== undefined) return undefined;
        host = value;
        break;
      case 'content-length':
        if (contentLength !== -1 || !DIGITS.test(value)) return undefined;
        contentLength = Number(value);
        break;
      case 'transfer-encoding':
      case 'expect':
      case 'upgrade':
        return undefined;
      case 'connection':
        for (const t of value.split(',')) {
          const token = t.trim().toLowerCase();
          if (token === 'close') close = true;
          else if (token === 'upgrade') return undefined;
        }
        break;
      default:
        break;
    }
    addHeader(headers, lower, value);
  }
  // HTTP/1.1 requires Host; node:http answers 400 without one.
  if (host === undefined) return undefined;
  const { path, query } = splitTarget(target);
  return {
    method,
    path,
    query,
    headers,
    host,
    contentLength: Math.max(contentLength, 0),
    hasLength: contentLength !== -1,
    close,
  };
}
