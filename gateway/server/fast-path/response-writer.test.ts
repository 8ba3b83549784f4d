/**
 * What the fast path writes itself, as node:http's `respondError` writes it: a refusal as JSON,
 * an answer of the gateway's own (`respond`) with its body as it is, text or bytes, nothing after
 * the head for HEAD, 204 and 304.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { GatewayError } from '../../pipeline/errors.ts';
import { errorResponse } from './response-writer.ts';

/** The response as bytes, split into its head lines (date left out) and its body. */
function parts(out: string | Buffer): { lines: string[]; body: Buffer } {
  const bytes = typeof out === 'string' ? Buffer.from(out) : out;
  const end = bytes.indexOf('\r\n\r\n');
  const lines = bytes
    .toString('latin1', 0, end)
    .split('\r\n')
    .filter((l) => !l.startsWith('date: '));
  return { lines, body: bytes.subarray(end + 4) };
}

describe('fast path answers', () => {
  const gzipped = gzipSync(Buffer.from('x'.repeat(100)));
  const rows: {
    name: string;
    error: GatewayError;
    head?: boolean;
    lines: string[];
    body: Buffer;
  }[] = [
    {
      name: "a refusal: JSON with its headers and the context's",
      error: GatewayError.basicAuthMissing('r'),
      lines: [
        'HTTP/1.1 401 Unauthorized',
        'x-added: 1',
        'www-authenticate: Basic realm="r"',
        'content-type: application/json',
        'content-length: 39',
        'connection: keep-alive',
        'keep-alive: timeout=65',
      ],
      body: Buffer.from('{"error":"Authorization field missing"}'),
    },
    {
      name: 'an answer: its text body and its own content type, UTF-8 counted in bytes',
      error: GatewayError.answer(200, 'héllo', { 'content-type': 'text/plain; charset=utf-8' }),
      lines: [
        'HTTP/1.1 200 OK',
        'x-added: 1',
        'content-type: text/plain; charset=utf-8',
        'content-length: 6',
        'connection: keep-alive',
        'keep-alive: timeout=65',
      ],
      body: Buffer.from('héllo'),
    },
    {
      name: 'an answer of bytes (a gzipped file): sent as they are',
      error: GatewayError.answer(200, gzipped, { 'content-encoding': 'gzip' }),
      lines: [
        'HTTP/1.1 200 OK',
        'x-added: 1',
        'content-encoding: gzip',
        `content-length: ${String(gzipped.length)}`,
        'connection: keep-alive',
        'keep-alive: timeout=65',
      ],
      body: gzipped,
    },
    {
      name: 'an answer of bytes to HEAD: its length, no body',
      error: GatewayError.answer(200, gzipped, {}),
      head: true,
      lines: [
        'HTTP/1.1 200 OK',
        'x-added: 1',
        `content-length: ${String(gzipped.length)}`,
        'connection: keep-alive',
        'keep-alive: timeout=65',
      ],
      body: Buffer.alloc(0),
    },
    {
      name: '304: no length, no body',
      error: GatewayError.answer(304, '', { etag: '"a"' }),
      lines: [
        'HTTP/1.1 304 Not Modified',
        'x-added: 1',
        'etag: "a"',
        'connection: keep-alive',
        'keep-alive: timeout=65',
      ],
      body: Buffer.alloc(0),
    },
  ];
  for (const row of rows) {
    test(row.name, () => {
      const got = parts(errorResponse(row.error, { 'x-added': '1' }, true, row.head === true));
      assert.deepEqual(got.lines, row.lines);
      assert.deepEqual(got.body, row.body);
    });
  }
});
