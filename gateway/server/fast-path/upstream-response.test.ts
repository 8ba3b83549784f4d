/**
 * The fast path's upstream response parser, as tables: the final response head (1xx skipped,
 * what fails the call), where a chunked body ends, whole and read by read, and where any body
 * ends by its framing (`BodyEnd`). What the client
 * then gets is checked in gateway/conformance/fast-path.test.ts (framings, 1xx, failures).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BodyEnd, ChunkedEnd, readResponseHead, type ResponseHead } from './upstream-response.ts';

const bytes = (s: string): Buffer => Buffer.from(s, 'latin1');

describe('upstream response head', () => {
  const heads: {
    name: string;
    raw: string;
    /** The fields the head must have, and the bytes after it ('' for none). */
    want: Partial<ResponseHead> & { rest?: string };
  }[] = [
    {
      name: 'status, reason, headers in order',
      raw: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-A: 1\r\n\r\n',
      want: {
        status: 200,
        reason: 'OK',
        headers: [
          { lower: 'content-type', raw: 'Content-Type', value: 'text/plain' },
          { lower: 'x-a', raw: 'X-A', value: '1' },
        ],
        rest: '',
      },
    },
    {
      name: 'the bytes after the head',
      raw: 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok',
      want: { rest: 'ok' },
    },
    { name: 'no reason phrase', raw: 'HTTP/1.1 204\r\n\r\n', want: { status: 204, reason: '' } },
    { name: 'a reason with spaces', raw: 'HTTP/1.1 404 Not Found\r\n\r\n', want: { reason: 'Not Found' } },
    { name: 'HTTP/1.0', raw: 'HTTP/1.0 200 OK\r\n\r\n', want: { status: 200 } },
    {
      name: '100 Continue skipped',
      raw: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n',
      want: { status: 201, cl: '0' },
    },
    {
      name: 'several 1xx skipped (103 Early Hints with headers)',
      raw: 'HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\nbody',
      want: { status: 200, headers: [], rest: 'body' },
    },
    { name: 'Content-Length', raw: 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n', want: { cl: '5' } },
    {
      name: 'Content-Length twice, same value',
      raw: 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\nContent-Length: 5\r\n\r\n',
      want: { cl: '5' },
    },
    {
      name: 'Transfer-Encoding lines joined',
      raw: 'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n',
      want: { te: 'gzip, chunked', cl: undefined },
    },
    {
      name: 'Connection values collected',
      raw: 'HTTP/1.1 200 OK\r\nconnection: keep-alive\r\nConnection: close, x-hop\r\n\r\n',
      want: { connValues: ['keep-alive', 'close, x-hop'] },
    },
    {
      name: 'Date seen',
      raw: 'HTTP/1.1 200 OK\r\ndate: Fri, 27 Nov 2026 10:00:00 GMT\r\n\r\n',
      want: { date: true },
    },
    { name: 'no Date', raw: 'HTTP/1.1 200 OK\r\n\r\n', want: { date: false } },
    {
      name: 'whitespace around values trimmed (SP and HTAB)',
      raw: 'HTTP/1.1 200 OK\r\nx-a: \t spaced \t\r\n\r\n',
      want: { headers: [{ lower: 'x-a', raw: 'x-a', value: 'spaced' }] },
    },
  ];
  for (const row of heads) {
    test(`read: ${row.name}`, () => {
      const read = readResponseHead(bytes(row.raw));
      assert.ok(!(read instanceof Error) && 'head' in read, read instanceof Error ? read.message : 'more');
      const { rest, ...fields } = row.want;
      const picked = Object.fromEntries(
        Object.keys(fields).map((k) => [k, read.head[k as keyof ResponseHead]]),
      );
      assert.deepEqual(picked, fields);
      if (rest !== undefined) assert.equal(read.rest?.toString('latin1') ?? '', rest);
    });
  }

  const more: { name: string; raw: string; keep: string | undefined }[] = [
    {
      name: 'nothing complete yet',
      raw: 'HTTP/1.1 200 OK\r\ncontent-le',
      keep: 'HTTP/1.1 200 OK\r\ncontent-le',
    },
    { name: 'one byte short', raw: 'HTTP/1.1 200 OK\r\n\r', keep: 'HTTP/1.1 200 OK\r\n\r' },
    {
      name: 'a 1xx whole, the final head not yet: the 1xx is dropped',
      raw: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2',
      keep: 'HTTP/1.1 2',
    },
    { name: 'a 1xx whole and nothing after it', raw: 'HTTP/1.1 100 Continue\r\n\r\n', keep: undefined },
  ];
  for (const row of more) {
    test(`more: ${row.name}`, () => {
      const read = readResponseHead(bytes(row.raw));
      assert.ok(!(read instanceof Error) && 'more' in read, read instanceof Error ? read.message : 'a head');
      assert.equal(read.more?.toString('latin1'), row.keep);
    });
  }

  const failures: { name: string; raw: string; error: string }[] = [
    {
      name: 'a head over 64 KiB',
      raw: `HTTP/1.1 200 OK\r\nx: ${'a'.repeat(65_536)}`,
      error: 'upstream response head too large',
    },
    {
      name: '101 Switching Protocols',
      raw: 'HTTP/1.1 101 Switching Protocols\r\n\r\n',
      error: 'unexpected 101 from upstream',
    },
    { name: 'four-digit status', raw: 'HTTP/1.1 2000 OK\r\n\r\n', error: 'malformed upstream status line' },
    { name: 'HTTP/2 status line', raw: 'HTTP/2 200\r\n\r\n', error: 'malformed upstream status line' },
    { name: 'not HTTP', raw: 'ICY 200 OK\r\n\r\n', error: 'malformed upstream status line' },
    {
      name: 'no space after the status',
      raw: 'HTTP/1.1 200OK\r\n\r\n',
      error: 'malformed upstream status line',
    },
    {
      name: 'version in lower case',
      raw: 'http/1.1 200 OK\r\n\r\n',
      error: 'malformed upstream status line',
    },
    {
      name: 'a header line without a colon',
      raw: 'HTTP/1.1 200 OK\r\nbad header\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'obs-fold without a colon',
      raw: 'HTTP/1.1 200 OK\r\nx-a: 1\r\n folded\r\n\r\n',
      error: 'malformed upstream header',
    },
    { name: 'an empty name', raw: 'HTTP/1.1 200 OK\r\n: v\r\n\r\n', error: 'malformed upstream header' },
    {
      name: 'conflicting Content-Length',
      raw: 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n',
      error: 'invalid upstream content-length',
    },
    ...['', '-1', '+5', '5, 5', '0x5', '1234567890123456'].map((value) => ({
      name: `Content-Length ${JSON.stringify(value)}`,
      raw: `HTTP/1.1 200 OK\r\ncontent-length: ${value}\r\n\r\n`,
      error: 'invalid upstream content-length',
    })),
    // what node:http's client refuses (502 there): never relayed to a client
    {
      name: 'a bare CR in a value',
      raw: 'HTTP/1.1 200 OK\r\nx-a: 1\r2\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'a bare LF in a header line (a second header for a lenient client)',
      raw: 'HTTP/1.1 200 OK\r\nx-a: 1\nx-b: 2\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'NUL in a value',
      raw: 'HTTP/1.1 200 OK\r\nx-a: 1\x002\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'DEL in a value',
      raw: 'HTTP/1.1 200 OK\r\nx-a: 1\x7f\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'obs-fold that looks like a header',
      raw: 'HTTP/1.1 200 OK\r\nx-a: 1\r\n x-b: 2\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'whitespace before the colon',
      raw: 'HTTP/1.1 200 OK\r\nx-a : 1\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'an invalid name character',
      raw: 'HTTP/1.1 200 OK\r\nx(a): 1\r\n\r\n',
      error: 'malformed upstream header',
    },
    {
      name: 'Transfer-Encoding and Content-Length',
      raw: 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n',
      error: 'upstream sent both transfer-encoding and content-length',
    },
    {
      name: 'Content-Length and a Transfer-Encoding that is not chunked',
      raw: 'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\ncontent-length: 2\r\n\r\n',
      error: 'upstream sent both transfer-encoding and content-length',
    },
    {
      name: 'a malformed final head after a 1xx',
      raw: 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 OK\r\n\r\n',
      error: 'malformed upstream status line',
    },
  ];
  for (const row of failures) {
    test(`fails: ${row.name}`, () => {
      const read = readResponseHead(bytes(row.raw));
      assert.ok(read instanceof Error, JSON.stringify(read));
      assert.equal(read.message, row.error);
    });
  }
});

/** Scans `body` in reads of `size` bytes: the absolute end, -1 (goes on) or -2 (malformed). */
function scan(body: string, size: number): number {
  const chunks = new ChunkedEnd();
  const b = bytes(body);
  for (let at = 0; at < b.length; at += size) {
    const r = chunks.scan(b.subarray(at, at + size));
    if (r === -2) return -2;
    if (r >= 0) return at + r;
  }
  return -1;
}

describe('chunked body end', () => {
  const rows: { name: string; body: string; end: number | 'length' }[] = [
    { name: 'one chunk, then the last', body: '5\r\nhello\r\n0\r\n\r\n', end: 'length' },
    { name: 'several chunks', body: '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n', end: 'length' },
    { name: 'chunk extensions', body: '5;ext=1\r\nhello\r\n0;last\r\n\r\n', end: 'length' },
    {
      name: 'hex sizes in both cases',
      body: `a\r\n${'x'.repeat(10)}\r\nB\r\n${'y'.repeat(11)}\r\n0\r\n\r\n`,
      end: 'length',
    },
    { name: 'leading zeros', body: '0005\r\nhello\r\n0\r\n\r\n', end: 'length' },
    { name: 'whitespace after the size', body: '5 \r\nhello\r\n0\t\r\n\r\n', end: 'length' },
    { name: 'trailers', body: '5\r\nhello\r\n0\r\nx-trailer: t\r\nx-other: u\r\n\r\n', end: 'length' },
    { name: 'CRLF inside chunk data is data', body: '4\r\n\r\n\r\n\r\n0\r\n\r\n', end: 'length' },
    { name: 'bytes after the end', body: '5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK', end: 15 },
    { name: 'not ended: in the data', body: '5\r\nhel', end: -1 },
    { name: 'not ended: before the trailers end', body: '5\r\nhello\r\n0\r\nx: 1\r\n', end: -1 },
    { name: 'not ended: a size line without its LF', body: '5;ext', end: -1 },
    { name: 'malformed: not hex', body: 'x\r\n', end: -2 },
    { name: 'malformed: an empty size line', body: '\r\n5\r\nhello\r\n0\r\n\r\n', end: -2 },
    { name: 'malformed: a size of 14 hex digits', body: `${'f'.repeat(14)}\r\n`, end: -2 },
    { name: 'malformed: data longer than its size', body: '5\r\nhelloX\r\n0\r\n\r\n', end: -2 },
    { name: 'malformed: a sign before the size', body: '+5\r\nhello\r\n0\r\n\r\n', end: -2 },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const end = row.end === 'length' ? row.body.length : row.end;
      assert.equal(scan(row.body, row.body.length), end, 'in one read');
      assert.equal(scan(row.body, 1), end, 'one byte per read');
      assert.equal(scan(row.body, 3), end, 'three bytes per read');
    });
  }
});

describe('body end by framing', () => {
  const rows: {
    name: string;
    head: string;
    /** The response answers HEAD. */
    toHead?: boolean;
    framing: BodyEnd['framing'];
    /** The bytes after the head, read in the reads given. */
    reads: string[];
    /** What `take` answers for each read, and whether the body has ended after the last. */
    took: number[];
    ended: boolean;
  }[] = [
    {
      name: 'Content-Length: read by read, bytes after it are not the body',
      head: 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n',
      framing: 'length',
      reads: ['hel', 'loHTTP'],
      took: [3, 2],
      ended: true,
    },
    {
      name: 'Content-Length: not ended while bytes are missing',
      head: 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n',
      framing: 'length',
      reads: ['hell'],
      took: [4],
      ended: false,
    },
    {
      name: 'Content-Length 0: ended at once',
      head: 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n',
      framing: 'length',
      reads: [],
      took: [],
      ended: true,
    },
    {
      name: 'chunked, bytes after the last chunk are not the body',
      head: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n',
      framing: 'chunked',
      reads: ['5\r\nhel', 'lo\r\n0\r\n\r\nX'],
      took: [6, 9],
      ended: true,
    },
    {
      name: 'chunked after another coding',
      head: 'HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n',
      framing: 'chunked',
      reads: ['0\r\n\r\n'],
      took: [5],
      ended: true,
    },
    {
      name: 'chunked, malformed',
      head: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n',
      framing: 'chunked',
      reads: ['x\r\n'],
      took: [-1],
      ended: false,
    },
    {
      name: 'a Transfer-Encoding not ending in chunked: until the upstream closes',
      head: 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\n',
      framing: 'close',
      reads: ['0\r\n\r\n', 'more'],
      took: [5, 4],
      ended: false,
    },
    {
      name: 'neither Content-Length nor Transfer-Encoding: until the upstream closes',
      head: 'HTTP/1.1 200 OK\r\n\r\n',
      framing: 'close',
      reads: ['abc'],
      took: [3],
      ended: false,
    },
    {
      name: '204: no body, whatever follows',
      head: 'HTTP/1.1 204 No Content\r\ncontent-length: 5\r\n\r\n',
      framing: 'none',
      reads: ['hello'],
      took: [0],
      ended: true,
    },
    {
      name: '304: no body',
      head: 'HTTP/1.1 304 Not Modified\r\ntransfer-encoding: chunked\r\n\r\n',
      framing: 'none',
      reads: [],
      took: [],
      ended: true,
    },
    {
      name: 'the answer to HEAD: no body, whatever its head says',
      head: 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n',
      toHead: true,
      framing: 'none',
      reads: ['hello'],
      took: [0],
      ended: true,
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const read = readResponseHead(bytes(row.head));
      assert.ok(!(read instanceof Error) && 'head' in read, 'the head is read');
      const end = new BodyEnd(read.head, row.toHead === true);
      assert.equal(end.framing, row.framing);
      assert.deepEqual(
        row.reads.map((r) => end.take(bytes(r))),
        row.took,
      );
      assert.equal(end.ended, row.ended);
    });
  }
});
