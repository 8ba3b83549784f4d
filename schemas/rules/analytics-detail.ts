/**
 * Detailed analytics records (`enable_detailed_recording` on an API definition): the request and
 * response bodies a gateway adds to the analytics record of each request of such an API, bounded
 * in size, and what the dashboard reads back. One model for the gateway that writes them
 * (gateway/middleware/detailed-recording/, gateway/analytics/) and the dashboard that stores them
 * (dashboard/analytics/details.ts).
 */
import { isUtf8 } from 'node:buffer';
import { isPlainObject } from '../../lib/plain-object.ts';

/** The most bytes of each body a detailed record keeps; a longer body is cut there and marked. */
export const DETAIL_BODY_LIMIT = 16 * 1024;

/** How a recorded body is written: as UTF-8 text, or base64 when its bytes are not UTF-8 text. */
export type BodyEncoding = 'utf8' | 'base64';

/** One recorded body. */
export interface RecordedBody {
  /** The first DETAIL_BODY_LIMIT bytes at most, written as `encoding` says. */
  body: string;
  encoding: BodyEncoding;
  /** Bytes the body had in all (as far as the gateway saw it). */
  size: number;
  /** True when `body` holds less than the whole body (cut at DETAIL_BODY_LIMIT, or not read). */
  truncated: boolean;
}

/**
 * What a detailed record adds to an analytics record (`detail` of a record of
 * `POST /system/analytics`).
 */
export interface AnalyticsDetail {
  /** The query string the client sent, with its `?` (empty when none). */
  query: string;
  request: RecordedBody;
  /** The upstream's response body; empty when the gateway answered itself (a refusal). */
  response: RecordedBody;
}

/** A recorded body of `data` (the bytes seen, at most the limit) out of `size` in all. */
export function recordedBody(data: Buffer, size: number, cut: boolean): RecordedBody {
  const kept = data.length > DETAIL_BODY_LIMIT ? data.subarray(0, DETAIL_BODY_LIMIT) : data;
  const utf8 = isUtf8(kept);
  return {
    body: kept.toString(utf8 ? 'utf8' : 'base64'),
    encoding: utf8 ? 'utf8' : 'base64',
    size,
    truncated: cut || kept.length < size,
  };
}

const EMPTY: RecordedBody = { body: '', encoding: 'utf8', size: 0, truncated: false };

function readBody(v: unknown): RecordedBody {
  if (!isPlainObject(v)) return EMPTY;
  const encoding = v.encoding === 'base64' ? 'base64' : 'utf8';
  // A base64 body of DETAIL_BODY_LIMIT bytes is 4/3 as long; anything longer was not a gateway's.
  const body = typeof v.body === 'string' && v.body.length <= (DETAIL_BODY_LIMIT * 4) / 3 + 4 ? v.body : '';
  const size = typeof v.size === 'number' && Number.isFinite(v.size) && v.size >= 0 ? v.size : 0;
  return { body, encoding, size, truncated: v.truncated === true };
}

/** The detail of a record as received (empty bodies where it is not one). */
export function readAnalyticsDetail(v: unknown): AnalyticsDetail {
  if (!isPlainObject(v)) return { query: '', request: EMPTY, response: EMPTY };
  return {
    query: typeof v.query === 'string' && v.query.length <= 2048 ? v.query : '',
    request: readBody(v.request),
    response: readBody(v.response),
  };
}
