/**
 * The fast path's request-head parser, as a table: each class of head it may meet, and what it
 * does with it. `fast`: the fast path serves it, with these fields; `node:http`: the connection
 * goes to node:http at once, which decides (400, 431, or serves it); `more`: the head is not
 * complete yet and could still become one the fast path takes. What node:http answers on the
 * wire, and that nothing reaches the upstream, is checked in gateway/conformance/fast-path.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { headEnd, MAX_HEAD, parseRequestHead, type ParsedHead } from './head-parser.ts';

type Outcome = ParsedHead | 'node:http' | 'more';

/** What the connection (connection.ts `next`) makes of `raw` buffered at the start of a head. */
function read(raw: string): Outcome {
  const buf = Buffer.from(raw, 'latin1');
  const end = headEnd(buf);
  if (end === -1) return 'more';
  if (end < 0) return 'node:http';
  return parseRequestHead(buf.toString('latin1', 0, end)) ?? 'node:http';
}

/** A head of `lines` (the request line first), CRLF line ends and the blank line. */
const head = (...lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;
const GET = 'GET /x HTTP/1.1';
const POST = 'POST /x HTTP/1.1';
const HOST = 'host: gw.test';

interface Row {
  name: string;
  raw: string;
  /** The fields the parsed head must have (the others are not looked at), or where it goes. */
  want: Partial<ParsedHead> | 'node:http' | 'more';
}

const valid: Row[] = [
  {
    name: 'minimal GET',
    raw: head(GET, HOST),
    want: {
      method: 'GET',
      path: '/x',
      query: '',
      host: 'gw.test',
      headers: { host: 'gw.test' },
      contentLength: 0,
      hasLength: false,
      close: false,
    },
  },
  ...['GET', 'HEAD', 'DELETE', 'OPTIONS', 'POST', 'PUT', 'PATCH'].map((method) => ({
    name: `method ${method}`,
    raw: head(`${method} /m HTTP/1.1`, HOST),
    want: { method, path: '/m' },
  })),
  {
    name: 'query string',
    raw: head('GET /a/b?x=1&y HTTP/1.1', HOST),
    want: { path: '/a/b', query: '?x=1&y' },
  },
  { name: 'dot segments removed', raw: head('GET /a/../b HTTP/1.1', HOST), want: { path: '/b' } },
  {
    name: 'target characters node:http takes',
    raw: head('GET /a|{}^`"<>\\#f HTTP/1.1', HOST),
    want: { path: '/a|{}^`"<>\\#f' },
  },
  {
    name: 'Content-Length',
    raw: head(POST, HOST, 'content-length: 5'),
    want: { contentLength: 5, hasLength: true, headers: { host: 'gw.test', 'content-length': '5' } },
  },
  {
    name: 'Content-Length 0',
    raw: head(POST, HOST, 'Content-Length: 0'),
    want: { contentLength: 0, hasLength: true },
  },
  {
    name: 'Content-Length with leading zeros (node:http takes it)',
    raw: head(POST, HOST, 'content-length: 002'),
    want: { contentLength: 2, hasLength: true },
  },
  {
    name: 'Content-Length of 15 digits',
    raw: head(POST, HOST, 'content-length: 999999999999999'),
    want: { contentLength: 999_999_999_999_999 },
  },
  {
    name: 'optional whitespace around values (SP and HTAB) is not part of them',
    raw: head(GET, 'host:\t gw.test \t', 'x-a:  a  b\t'),
    want: { host: 'gw.test', headers: { host: 'gw.test', 'x-a': 'a  b' } },
  },
  {
    name: 'empty value',
    raw: head(GET, HOST, 'x-empty:'),
    want: { headers: { host: 'gw.test', 'x-empty': '' } },
  },
  { name: 'empty Host (node:http takes it)', raw: head(GET, 'host:'), want: { host: '' } },
  {
    name: 'names in any case, stored in lower case',
    raw: head(GET, 'HOST: gw.test', 'X-Mixed-Case: 1'),
    want: { host: 'gw.test', headers: { host: 'gw.test', 'x-mixed-case': '1' } },
  },
  {
    name: 'every token character in a name',
    raw: head(GET, HOST, "x!#$%&'*+-.^_`|~09: 1"),
    want: { headers: { host: 'gw.test', "x!#$%&'*+-.^_`|~09": '1' } },
  },
  {
    name: 'obs-text (bytes >= 0x80) in a value, kept as latin1 (node:http takes it)',
    raw: head(GET, HOST, 'x-a: caf\xe9'),
    want: { headers: { host: 'gw.test', 'x-a': 'caf\xe9' } },
  },
  {
    name: 'repeated headers joined as node:http joins them',
    raw: head(
      GET,
      HOST,
      'accept: a',
      'Accept: b',
      'cookie: c=1',
      'cookie: d=2',
      'set-cookie: s=1',
      'set-cookie: s=2',
      'authorization: first',
      'authorization: second',
    ),
    want: {
      headers: {
        host: 'gw.test',
        accept: 'a, b',
        cookie: 'c=1; d=2',
        'set-cookie': ['s=1', 's=2'],
        authorization: 'first',
      },
    },
  },
  { name: 'Connection: close', raw: head(GET, HOST, 'connection: close'), want: { close: true } },
  {
    name: 'Connection: close among other tokens, any case',
    raw: head(GET, HOST, 'Connection: keep-alive, Close'),
    want: { close: true },
  },
  { name: 'Connection: keep-alive', raw: head(GET, HOST, 'connection: keep-alive'), want: { close: false } },
  {
    name: 'a head of exactly MAX_HEAD bytes',
    raw: head(GET, HOST, `x-pad: ${'a'.repeat(MAX_HEAD - `${GET}\r\n${HOST}\r\nx-pad: `.length)}`),
    want: { method: 'GET' },
  },
];

const toNodeHttp: Row[] = [
  // obs-fold: a line starting with SP or HTAB continues the one before (RFC 9112 5.2: refused)
  { name: 'obs-fold with SP', raw: head(GET, HOST, 'x-a: 1', ' folded'), want: 'node:http' },
  { name: 'obs-fold with HTAB', raw: head(GET, HOST, 'x-a: 1', '\tfolded'), want: 'node:http' },
  { name: 'obs-fold that looks like a header', raw: head(GET, HOST, 'x-a: 1', ' x-b: 2'), want: 'node:http' },
  { name: 'first header line folded', raw: head(GET, ' host: gw.test'), want: 'node:http' },
  // bare CR and LF
  { name: 'bare LF line ends', raw: 'GET /x HTTP/1.1\nhost: gw.test\n\n', want: 'node:http' },
  {
    name: 'bare LF ending the request line',
    raw: 'GET /x HTTP/1.1\nhost: gw.test\r\n\r\n',
    want: 'node:http',
  },
  { name: 'bare LF inside a header line', raw: head(GET, 'host: gw.test\nx-a: 1'), want: 'node:http' },
  { name: 'bare LF before the final CRLF', raw: 'GET /x HTTP/1.1\r\nhost: gw.test\n\r\n', want: 'node:http' },
  { name: 'bare LF, head not complete yet', raw: 'GET /x HTTP/1.1\nhost: gw', want: 'node:http' },
  { name: 'bare CR ending the request line', raw: head('GET /x HTTP/1.1\rhost: gw.test'), want: 'node:http' },
  { name: 'bare CR inside a value', raw: head(GET, HOST, 'x-a: 1\r2'), want: 'node:http' },
  { name: 'bare CR, head not complete yet', raw: 'GET /x HTTP/1.1\rhost: gw', want: 'node:http' },
  // Content-Length
  {
    name: 'duplicate Content-Length, same value',
    raw: head(POST, HOST, 'content-length: 2', 'content-length: 2'),
    want: 'node:http',
  },
  {
    name: 'duplicate Content-Length, conflicting',
    raw: head(POST, HOST, 'content-length: 1', 'Content-Length: 2'),
    want: 'node:http',
  },
  ...['', ' ', '+2', '-1', '2, 2', '2 2', '0x10', '1e3', '1.0', '\xb2', '1234567890123456'].map((value) => ({
    name: `Content-Length ${JSON.stringify(value)}`,
    raw: head(POST, HOST, `content-length: ${value}`),
    want: 'node:http' as const,
  })),
  // Transfer-Encoding: never on the fast path, whatever its value, alone or with Content-Length
  ...['chunked', 'Chunked', 'chunked, identity', 'identity', 'gzip, chunked', 'chunked, chunked', ''].map(
    (value) => ({
      name: `Transfer-Encoding: ${value}`,
      raw: head(POST, HOST, `transfer-encoding: ${value}`),
      want: 'node:http' as const,
    }),
  ),
  {
    name: 'Transfer-Encoding twice',
    raw: head(POST, HOST, 'transfer-encoding: chunked', 'transfer-encoding: chunked'),
    want: 'node:http',
  },
  {
    name: 'Transfer-Encoding and Content-Length',
    raw: head(POST, HOST, 'content-length: 3', 'transfer-encoding: chunked'),
    want: 'node:http',
  },
  {
    name: 'Transfer-Encoding then Content-Length',
    raw: head(POST, HOST, 'Transfer-Encoding: chunked', 'Content-Length: 3'),
    want: 'node:http',
  },
  {
    name: 'Transfer-Encoding, name in capitals',
    raw: head(POST, HOST, 'TRANSFER-ENCODING: chunked'),
    want: 'node:http',
  },
  // names
  { name: 'space before the colon', raw: head(GET, HOST, 'x-a : 1'), want: 'node:http' },
  { name: 'HTAB before the colon', raw: head(GET, HOST, 'x-a\t: 1'), want: 'node:http' },
  {
    name: 'space before the colon of Transfer-Encoding',
    raw: head(POST, HOST, 'content-length: 3', 'transfer-encoding : chunked'),
    want: 'node:http',
  },
  { name: 'space before the colon of Host', raw: head(GET, 'host : gw.test'), want: 'node:http' },
  ...['x(a)', 'x a', 'x@a', 'x"a', 'x/a', 'x[a]', 'x=a', 'x{a}', 'x,a', 'x\xe9'].map((name) => ({
    name: `invalid token character in a name: ${JSON.stringify(name)}`,
    raw: head(GET, HOST, `${name}: 1`),
    want: 'node:http' as const,
  })),
  { name: 'empty name', raw: head(GET, HOST, ': v'), want: 'node:http' },
  { name: 'line without a colon', raw: head(GET, HOST, 'bad header'), want: 'node:http' },
  { name: '__proto__ as a name', raw: head(GET, HOST, '__proto__: x'), want: 'node:http' },
  // NUL and other control characters
  { name: 'NUL in a value', raw: head(GET, HOST, 'x-a: a\x00b'), want: 'node:http' },
  { name: 'NUL in a name', raw: head(GET, HOST, 'x\x00a: 1'), want: 'node:http' },
  { name: 'NUL in the target', raw: head('GET /x\x00 HTTP/1.1', HOST), want: 'node:http' },
  { name: 'NUL in the method', raw: head('GE\x00T /x HTTP/1.1', HOST), want: 'node:http' },
  { name: 'VT in a value', raw: head(GET, HOST, 'x-a: a\x0bb'), want: 'node:http' },
  { name: 'DEL in a value', raw: head(GET, HOST, 'x-a: a\x7fb'), want: 'node:http' },
  { name: 'DEL in the target', raw: head('GET /x\x7f HTTP/1.1', HOST), want: 'node:http' },
  {
    name: 'obs-text (bytes >= 0x80) in the target (node:http: 400)',
    raw: head('GET /caf\xe9 HTTP/1.1', HOST),
    want: 'node:http',
  },
  // targets in other forms
  { name: 'absolute-form target', raw: head('GET http://gw.test/x HTTP/1.1', HOST), want: 'node:http' },
  { name: 'authority-form target', raw: head('CONNECT gw.test:443 HTTP/1.1', HOST), want: 'node:http' },
  { name: 'asterisk-form target', raw: head('OPTIONS * HTTP/1.1', HOST), want: 'node:http' },
  { name: 'target without its slash', raw: head('GET x HTTP/1.1', HOST), want: 'node:http' },
  // request lines
  { name: 'two spaces after the method', raw: head('GET  /x HTTP/1.1', HOST), want: 'node:http' },
  { name: 'space in the target', raw: head('GET /a b HTTP/1.1', HOST), want: 'node:http' },
  { name: 'space after the version', raw: head('GET /x HTTP/1.1 ', HOST), want: 'node:http' },
  { name: 'no version', raw: head('GET /x', HOST), want: 'node:http' },
  { name: 'HTAB between method and target', raw: head('GET\t/x HTTP/1.1', HOST), want: 'node:http' },
  { name: 'CRLF before the request line', raw: `\r\n${head(GET, HOST)}`, want: 'node:http' },
  { name: 'method in lower case', raw: head('get /x HTTP/1.1', HOST), want: 'node:http' },
  ...['TRACE', 'CONNECT', 'PROPFIND', 'FOO'].map((method) => ({
    name: `method ${method}`,
    raw: head(`${method} /x HTTP/1.1`, HOST),
    want: 'node:http' as const,
  })),
  // versions
  { name: 'HTTP/1.0', raw: head('GET /x HTTP/1.0', HOST), want: 'node:http' },
  {
    name: 'HTTP/1.0 with keep-alive',
    raw: head('GET /x HTTP/1.0', HOST, 'connection: keep-alive'),
    want: 'node:http',
  },
  { name: 'HTTP/2.0', raw: head('GET /x HTTP/2.0', HOST), want: 'node:http' },
  { name: 'version in lower case', raw: head('GET /x http/1.1', HOST), want: 'node:http' },
  { name: 'HTTP/1.10', raw: head('GET /x HTTP/1.10', HOST), want: 'node:http' },
  { name: 'HTTP/2 prior-knowledge preface', raw: 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', want: 'node:http' },
  // what asks for more than a request and its response
  {
    name: 'Expect: 100-continue',
    raw: head(POST, HOST, 'expect: 100-continue', 'content-length: 2'),
    want: 'node:http',
  },
  { name: 'Expect: anything else (node:http: 417)', raw: head(GET, HOST, 'expect: foo'), want: 'node:http' },
  { name: 'Upgrade', raw: head(GET, HOST, 'upgrade: websocket', 'connection: Upgrade'), want: 'node:http' },
  { name: 'Upgrade without Connection: upgrade', raw: head(GET, HOST, 'upgrade: h2c'), want: 'node:http' },
  {
    name: 'Connection: upgrade among other tokens',
    raw: head(GET, HOST, 'connection: keep-alive, Upgrade'),
    want: 'node:http',
  },
  // Host
  { name: 'no Host', raw: head(GET, 'x-no-host: 1'), want: 'node:http' },
  { name: 'Host twice', raw: head(GET, HOST, 'host: other.test'), want: 'node:http' },
  // size
  {
    name: 'a head one byte over MAX_HEAD',
    raw: head(GET, HOST, `x-pad: ${'a'.repeat(MAX_HEAD + 1 - `${GET}\r\n${HOST}\r\nx-pad: `.length)}`),
    want: 'node:http',
  },
  {
    name: 'MAX_HEAD bytes and no end yet',
    raw: `${GET}\r\n${HOST}\r\nx-pad: ${'a'.repeat(MAX_HEAD)}`,
    want: 'node:http',
  },
  // not HTTP at all
  {
    name: 'a TLS ClientHello on a plain port',
    raw: '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',
    want: 'node:http',
  },
  { name: 'a method too long to be one the fast path takes', raw: 'PROPFIND', want: 'node:http' },
];

const incomplete: Row[] = [
  { name: 'nothing after the method yet', raw: 'GE', want: 'more' },
  { name: 'request line not ended', raw: 'GET /x HTTP/1.1', want: 'more' },
  { name: 'headers not ended', raw: `${GET}\r\n${HOST}\r\n`, want: 'more' },
  { name: 'one byte short', raw: `${GET}\r\n${HOST}\r\n\r`, want: 'more' },
  { name: 'a CR at the end of the bytes so far', raw: `${GET}\r`, want: 'more' },
];

function check(rows: Row[]): void {
  for (const row of rows) {
    test(row.name, () => {
      const got = read(row.raw);
      if (typeof row.want === 'string' || typeof got === 'string') {
        assert.equal(
          typeof got === 'string' ? got : 'fast',
          typeof row.want === 'string' ? row.want : 'fast',
        );
        return;
      }
      const picked = Object.fromEntries(Object.keys(row.want).map((k) => [k, got[k as keyof ParsedHead]]));
      assert.deepEqual(picked, row.want);
    });
  }
}

describe('head parser: heads the fast path serves', () => {
  check(valid);
});

describe('head parser: heads node:http decides about', () => {
  check(toNodeHttp);
});

describe('head parser: heads not complete yet', () => {
  check(incomplete);
});
